# rushline — the two commands a new machine needs are `make run` and `make test`.
GO        ?= go
BIN       := bin
PKGS      := ./...
TESTFLAGS ?= -race -count=1 -timeout 20m

.PHONY: run build test lint bench bench-push deps

## run: the server on its embedded default (private redis-server or miniredis, SQLite in ./data) plus the web page
run: deps build
	$(BIN)/rushline-server

## build: bin/rushline-server, bin/rushline-sim and bin/rushline-bench
build:
	$(GO) build -o $(BIN)/rushline-server ./server
	$(GO) build -o $(BIN)/rushline-sim ./simulator
	$(GO) build -o $(BIN)/rushline-bench ./bench/cmd/rushline-bench

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

## bench-push: 10,000 SSE streams against one server process, all promoted (latency, RSS, Redis commands per tick)
bench-push: deps build
	$(BIN)/rushline-bench push --streams 10000 --out bench/push-latest.json

## deps: install redis-server and chromium (for the HTML report's browser test) from Debian packages when missing (needs root or sudo)
deps:
	@command -v redis-server >/dev/null 2>&1 || { \
	  echo "redis-server missing: installing from Debian packages"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq redis-server >/dev/null; }
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "chromium missing: installing from Debian packages"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium >/dev/null; }
