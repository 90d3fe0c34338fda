module github.com/docketgo/docket/cmd

go 1.26.0

require (
	github.com/docketgo/docket/adapters/memory v0.0.0
	github.com/docketgo/docket/adapters/notify v0.0.0
	github.com/docketgo/docket/adapters/postgres v0.0.0
	github.com/docketgo/docket/app v0.0.0
	github.com/docketgo/docket/migrations v0.0.0
	github.com/docketgo/docket/ports v0.0.0
	github.com/google/wire v0.7.0
	github.com/jackc/pgx/v5 v5.12.0
	github.com/spf13/cobra v1.10.2
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/docketgo/docket/domain v0.0.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/jinzhu/inflection v1.0.0 // indirect
	github.com/puzpuzpuz/xsync/v3 v3.5.1 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	github.com/tmthrgd/go-hex v0.0.0-20190904060850-447a3041c3bc // indirect
	github.com/uptrace/bun v1.3.0 // indirect
	github.com/uptrace/bun/dialect/pgdialect v1.3.0 // indirect
	github.com/vmihailenco/msgpack/v5 v5.4.1 // indirect
	github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
)

replace (
	github.com/docketgo/docket/adapters/memory => ../adapters/memory
	github.com/docketgo/docket/adapters/notify => ../adapters/notify
	github.com/docketgo/docket/adapters/postgres => ../adapters/postgres
	github.com/docketgo/docket/app => ../app
	github.com/docketgo/docket/conformance => ../conformance
	github.com/docketgo/docket/domain => ../domain
	github.com/docketgo/docket/migrations => ../migrations
	github.com/docketgo/docket/pgtest => ../pgtest
	github.com/docketgo/docket/ports => ../ports
)
