module github.com/docketgo/docket/conformance

go 1.26
