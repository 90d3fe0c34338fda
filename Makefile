# Docket for Go — developer entry points. Every target works from a fresh
# clone with Go and (for the PostgreSQL-backed tests) the PostgreSQL binaries.

GO          ?= go
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
# Every module in go.work, as package patterns (`go test ./...` at the root
# has no module of its own and would fail).
PACKAGES     = $(shell $(GO) list -f '{{.Dir}}/...' -m)
TESTFLAGS   ?= -count=1
FUZZTIME    ?= 60s

.PHONY: all test test-race lint fmt vet staticcheck domain-deps demo generate fuzz tidy

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

## demo: run the example workflow.
demo:
	$(GO) run ./cmd/docket demo

## generate: regenerate generated code in every module.
generate:
	$(GO) generate $(PACKAGES)

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
