module github.com/docketgo/docket/pgtest

go 1.26
