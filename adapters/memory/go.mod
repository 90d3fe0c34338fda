module github.com/docketgo/docket/adapters/memory

go 1.26
