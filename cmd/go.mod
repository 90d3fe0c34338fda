module github.com/docketgo/docket/cmd

go 1.26
