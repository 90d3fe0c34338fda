module github.com/docketgo/docket/ports

go 1.26
