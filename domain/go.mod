module github.com/docketgo/docket/domain

go 1.26

require (
	github.com/stretchr/testify v1.11.1 // indirect
	pgregory.net/rapid v1.3.0 // indirect
)
