# rushline — the two commands a new machine needs are `make run` and `make test`.
GO        ?= go
BIN       := bin
PKGS      := ./...
TESTFLAGS ?= -race -count=1 -timeout 20m

.PHONY: run build test lint bench deps fmt

## run: the server on its embedded default (private redis-server or miniredis, SQLite in ./data) plus the web page
run: deps build
	$(BIN)/rushline-server

## build: bin/rushline-server
build:
	$(GO) build -o $(BIN)/rushline-server ./server

## test: gofmt + vet, then every test under the race detector against real Redis, SQLite and PostgreSQL
test: deps lint
	$(GO) test $(TESTFLAGS) $(PKGS)

## lint: gofmt and go vet
lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)

## bench: Go benchmarks of the engine scripts and HTTP handlers on a private real Redis
bench: deps
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./server/queue/ ./server/httpapi/ | tee bench/go-bench.txt

## deps: install redis-server from Debian packages when missing (needs root or sudo)
deps:
	@command -v redis-server >/dev/null 2>&1 || { \
	  echo "redis-server missing: installing from Debian packages"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq redis-server >/dev/null; }
