# rushline — the two commands a new machine needs are `make run` and `make test`.
GO        ?= go
BIN       := bin
PKGS      := ./...
# Most tests wait on real time (admission ticks, countdowns, child processes,
# a browser), so two packages at a time keep two cores busy, and up to four
# of a package's parallel tests run at once (go test's default is GOMAXPROCS,
# two here): server/app's replica, fault and drop tests mostly wait. Three
# and six were quicker on a faster machine, but on a slower one (Redis work
# ~2.5x the CPU) the timed end-to-end tests (practice races, seat maps,
# simulator shards) ran out of their time in two clean-clone CI runs.
# -ldflags=-s -w: test binaries without DWARF and symbol table link in
# less than half the CPU (server/app under -race: 4.1 -> 1.7 CPU-s), over
# ~40 test binaries a run; stack traces and race reports come from the
# runtime's own tables and stay as they were.
LINKFLAGS := -ldflags=-s\ -w
# -vet=off: make test runs lint, the whole of go vet, first; go test's own
# vet pass would only repeat a subset of it.
TESTFLAGS ?= -race -count=1 -timeout 20m -p 2 -parallel 4 -vet=off $(LINKFLAGS)
# The inner loop leaves out the race detector: with it test-short took 58-81 s
# on a shared two-core machine, without it about 40 s. make test (CI) has it.
SHORTFLAGS ?= -short -count=1 -timeout 5m -p 3 -parallel 6 $(LINKFLAGS)
# go test starts packages in the order given: the longest first, so the
# short ones fill in around them instead of trailing after. simulator/plan
# stays late: its live validation wants a machine not busy with load tests.
TESTPKGS  := ./server/app ./web ./server/httpapi ./bench ./simulator/engine ./simulator ./server/drop ./server/queue \
	./server/store ./simulator/report $(PKGS)
# The short lane's longest packages, first for the same reason.
SHORTPKGS := ./server/httpapi ./server/queue ./server/drop ./server/app ./server/store ./server/push $(PKGS)
# pipefail: a test run piped into testsummary fails when go test does.
SHELL     := bash
# -trimpath, for every go command make runs and the go builds the tests run:
# without it the build cache keys each of the module's packages by its
# absolute folder, so a clean clone in a new folder (as CI makes) compiled
# every package again for vet, staticcheck and each race test binary (go
# vet alone: 97 CPU-s in a second clone, 2.3 CPU-s with -trimpath). Keeps
# the GOFLAGS go env already has (e.g. -buildvcs=false).
export GOFLAGS := $(strip $(shell $(GO) env GOFLAGS) -trimpath)

.PHONY: run build test test-short lint fuzz bench bench-go bench-compare bench-ab bench-push bench-drop deps test-deps

## run: the server on its embedded default (private redis-server or miniredis, SQLite in ./data) plus the web page
run: deps build
	$(BIN)/rushline-server

## build: bin/rushline-server, bin/rushline-sim and bin/rushline-bench
build:
	$(GO) build -o $(BIN)/rushline-server ./server
	$(GO) build -o $(BIN)/rushline-sim ./simulator
	$(GO) build -o $(BIN)/rushline-bench ./bench/cmd/rushline-bench

## test: gofmt + vet, then every test under the race detector against real Redis, SQLite and PostgreSQL;
## go test's usual output, then the ten slowest tests
test: test-deps lint
	$(GO) build -o $(BIN)/testsummary ./internal/cmd/testsummary
	set -o pipefail; $(GO) test -json $(TESTFLAGS) $(TESTPKGS) | $(BIN)/testsummary

## test-short: the inner loop, under a minute: unit tests, the engine against Redis and the HTTP contract, without
## the race detector; the long end-to-end, fault, browser, replica-kill and bench smoke tests run only in `make test`
test-short: test-deps
	$(GO) build -o $(BIN)/testsummary ./internal/cmd/testsummary
	set -o pipefail; $(GO) test -json $(SHORTFLAGS) $(SHORTPKGS) | $(BIN)/testsummary

## lint: gofmt, go vet and staticcheck (a tool dependency in go.mod: `go tool staticcheck`)
lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) tool staticcheck $(PKGS)

## fuzz: every Fuzz* target under server/ and simulator/ for FUZZTIME each (go test -fuzz takes one target per run);
## new crashers land in the package's testdata/fuzz/<target>/, and plain `go test` replays them
FUZZTIME  ?= 10s
fuzz:
	@set -e; for f in $$(grep -rl --include='*_test.go' '^func Fuzz' server simulator | sort); do \
	  for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
	    echo "== ./$$(dirname $$f) $$t"; \
	    $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) ./$$(dirname $$f)/; \
	  done; \
	done

## bench: the full harness (takes ~10 min): redis-benchmark ceilings, the naive baseline and rushline-server
## at 1k/100k/1M waiting, admission, 10,000 SSE streams, memory → bench/results/<date>-<host>.json and .md
bench: deps build
	$(BIN)/rushline-bench run --out bench/results

## bench-go: Go benchmarks of the engine scripts and HTTP handlers on a private real Redis
bench-go: deps
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./server/queue/ ./server/httpapi/ | tee bench/go-bench.txt

## bench-compare: every figure of two result files with its change, e.g. make bench-compare OLD=a.json NEW=b.json
bench-compare: build
	$(BIN)/rushline-bench compare $(OLD) $(NEW)

## bench-ab: this tree's server against another build, OLD=path/to/rushline-server (leave it out to read this build
## alone): server and Redis CPU per join against the HTTP floor, ten rounds, each server alone while measured;
## WAITING=1000000 joins behind a line that long; RATE=5000 sends that many a second (an open loop) instead
bench-ab: deps build
	$(BIN)/rushline-bench ab $(if $(OLD),--build old=$(OLD)) $(if $(WAITING),--waiting $(WAITING)) $(if $(RATE),--rate $(RATE)) --build new=$(BIN)/rushline-server

## bench-push: 10,000 SSE streams against one server process, all promoted (latency, RSS, Redis commands per tick)
bench-push: deps build
	$(BIN)/rushline-bench push --streams 10000 --out bench/push-latest.json

## bench-drop: one practice drop, a 1,000,000 crowd and 1,000 people on SSE (Redis CPU per virtual user, promotion latency, RSS, sold out)
bench-drop: deps build
	$(BIN)/rushline-bench drop --crowd 1000000 --people 1000 --out bench/results

# install installs a Debian package (the second argument, default the command's name) when its command is missing (root or sudo).
define install
	@command -v $(1) >/dev/null 2>&1 || { \
	  echo "$(1) missing: installing from Debian packages"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq $(or $(2),$(1)) >/dev/null; }
endef

## deps: redis-server, for the server's private Redis and the tests, and redis-benchmark for the bench smoke test
deps:
	$(call install,redis-server)
	$(call install,redis-benchmark,redis-tools)

## test-deps: deps plus chromium and a Korean font, for the browser tests and their screenshots of the Korean pages
test-deps: deps
	$(call install,chromium)
	@fc-list :lang=ko 2>/dev/null | grep -q . || { \
	  echo "no Korean font: installing fonts-nanum from Debian packages"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq fonts-nanum >/dev/null; }
