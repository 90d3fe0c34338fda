module github.com/docketgo/docket/app

go 1.26

require (
	github.com/docketgo/docket/adapters/memory v0.0.0
	github.com/docketgo/docket/domain v0.0.0
	github.com/docketgo/docket/ports v0.0.0
	github.com/stretchr/testify v1.11.1
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

replace (
	github.com/docketgo/docket/adapters/memory => ../adapters/memory
	github.com/docketgo/docket/domain => ../domain
	github.com/docketgo/docket/ports => ../ports
)
