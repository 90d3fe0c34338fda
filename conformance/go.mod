module github.com/docketgo/docket/conformance

go 1.26

require (
	github.com/docketgo/docket/adapters/memory v0.0.0
	github.com/docketgo/docket/domain v0.0.0
	github.com/docketgo/docket/ports v0.0.0
)

require github.com/google/uuid v1.6.0 // indirect

replace (
	github.com/docketgo/docket/adapters/memory => ../adapters/memory
	github.com/docketgo/docket/domain => ../domain
	github.com/docketgo/docket/ports => ../ports
)
