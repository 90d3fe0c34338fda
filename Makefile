# Docket for Go — developer entry points. Every target works from a fresh
# clone with Go and (for the PostgreSQL-backed tests) the PostgreSQL binaries.

GO          ?= go
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
WIRE        ?= $(GO) run github.com/google/wire/cmd/wire@v0.7.0
# Packages holding wire injectors (wire.go, build tag wireinject).
WIRE_PACKAGES = ./cmd/internal/cli ./examples/custom-worker
# Every module in go.work, as package patterns (`go test ./...` at the root
# has no module of its own and would fail).
PACKAGES     = $(shell $(GO) list -f '{{.Dir}}/...' -m)
TESTFLAGS   ?= -count=1
FUZZTIME    ?= 60s

.PHONY: all test test-race lint fmt vet staticcheck domain-deps demo generate generate-check fuzz tidy bench

all: lint test

## test: run every module's tests (fuzz seed corpora included).
test:
	$(GO) test $(TESTFLAGS) $(PACKAGES)

## test-race: the same under the race detector.
test-race:
	$(GO) test -race $(TESTFLAGS) $(PACKAGES)

## lint: gofmt, go vet and staticcheck over every module.
lint: fmt vet staticcheck domain-deps

## domain-deps: the domain module imports nothing but the standard library.
domain-deps:
	@extra="$$(cd domain && $(GO) list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' ./... | grep -v '^github.com/docketgo/docket/domain' || true)"; \
	if [ -n "$$extra" ]; then echo "domain imports non-standard packages:"; echo "$$extra"; exit 1; fi

fmt:
	@out="$$(gofmt -l $$($(GO) list -f '{{.Dir}}' -m))"; \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PACKAGES)

staticcheck:
	$(STATICCHECK) $(PACKAGES)

## bench: run the benchmark suite (BENCH_PROFILE=smoke|local|scale), print
## its Markdown table and write the JSON report to BENCH_JSON. Database
## scenarios use DOCKET_BENCH_DATABASE_URL (see docs/benchmarks.md).
BENCH_PROFILE ?= smoke
BENCH_JSON    ?= bench-results.json
bench:
	cd bench && $(GO) run ./cmd/docketbench --profile $(BENCH_PROFILE) --json $(abspath $(BENCH_JSON))

## demo: run the example workflow.
demo:
	$(GO) run ./cmd/docket demo

## generate: regenerate generated code in every module: the google/wire
## injectors (wire_gen.go next to each wire.go), then go generate. The
## directive wire writes into wire_gen.go (go run -mod=mod ...) does not work
## in workspace mode, so go generate skips it and wire runs here instead.
generate:
	$(WIRE) gen $(WIRE_PACKAGES)
	$(GO) generate -skip 'github.com/google/wire/cmd/wire' $(PACKAGES)

## generate-check: fail when `make generate` changes any file (stale
## generated code). Leaves the regenerated files in place.
generate-check:
	@snapshot() { git status --porcelain=v1 --untracked-files=all; git diff; \
	  git ls-files --others --exclude-standard -z | xargs -0 -r sha256sum; }; \
	before="$$(snapshot)"; \
	$(MAKE) --no-print-directory generate >/dev/null || exit 1; \
	if [ "$$before" != "$$(snapshot)" ]; then \
	  echo "generated code is stale: run 'make generate' and commit the result"; \
	  git status --short; exit 1; \
	fi

## fuzz: run every fuzz target for FUZZTIME each (go test allows one target per run).
fuzz:
	@for dir in $$($(GO) list -f '{{.Dir}}' -m); do \
	  for pkg in $$(cd $$dir && $(GO) list ./...); do \
	    for target in $$(cd $$dir && $(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	      echo "== $$pkg $$target"; \
	      (cd $$dir && $(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg) || exit 1; \
	    done; \
	  done; \
	done

## tidy: go mod tidy in every module.
tidy:
	@for dir in $$($(GO) list -f '{{.Dir}}' -m); do (cd $$dir && $(GO) mod tidy) || exit 1; done
