# rushline — the two commands a new machine needs are `make run` and `make test`.
GO        ?= go
BIN       := bin
PKGS      := ./...
TESTFLAGS ?= -race -count=1 -timeout 20m

.PHONY: run build test lint bench bench-push deps test-deps

## run: the server on its embedded default (private redis-server or miniredis, SQLite in ./data) plus the web page
run: deps build
	$(BIN)/rushline-server

## build: bin/rushline-server, bin/rushline-sim and bin/rushline-bench
build:
	$(GO) build -o $(BIN)/rushline-server ./server
	$(GO) build -o $(BIN)/rushline-sim ./simulator
	$(GO) build -o $(BIN)/rushline-bench ./bench/cmd/rushline-bench

## test: gofmt + vet, then every test under the race detector against real Redis, SQLite and PostgreSQL
test: test-deps lint
	$(GO) test $(TESTFLAGS) $(PKGS)

## lint: gofmt and go vet
lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)

## bench: Go benchmarks of the engine scripts and HTTP handlers on a private real Redis
bench: deps
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./server/queue/ ./server/httpapi/ | tee bench/go-bench.txt

## bench-push: 10,000 SSE streams against one server process, all promoted (latency, RSS, Redis commands per tick)
bench-push: deps build
	$(BIN)/rushline-bench push --streams 10000 --out bench/push-latest.json

# install installs a Debian package when its command is missing (root or sudo).
define install
	@command -v $(1) >/dev/null 2>&1 || { \
	  echo "$(1) missing: installing from Debian packages"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq $(1) >/dev/null; }
endef

## deps: redis-server, for the server's private Redis and the tests
deps:
	$(call install,redis-server)

## test-deps: deps plus chromium, for the browser tests
test-deps: deps
	$(call install,chromium)
