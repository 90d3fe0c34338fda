module github.com/docketgo/docket/app

go 1.26
