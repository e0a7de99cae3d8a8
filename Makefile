# buzzload — see README.md. `make run` and `make test` do all set-up themselves.
GO       ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT   ?= $(shell git rev-parse --short HEAD 2>/dev/null)
LDFLAGS  := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
SCENARIO ?= scenarios/local-smoke.js
REPORT   ?= bin/buzz-report.json
NODE_DIR := testdata/node

.PHONY: all build test test-go node-deps bench lint run clean

all: build

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/buzzload ./cmd/buzzload

# The Node packages the cross-checks use (nostr-tools as an independent oracle).
node-deps: $(NODE_DIR)/node_modules/.installed
$(NODE_DIR)/node_modules/.installed: $(NODE_DIR)/package.json $(NODE_DIR)/package-lock.json
	cd $(NODE_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# Every test, the independent cross-checks and the fuzz seed corpora included.
test: node-deps
	BUZZLOAD_REQUIRE_NODE=1 $(GO) test -count=1 -timeout 15m ./...

# Benchmarks only (no tests): figures quoted in the README come from here.
bench: build
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./... | tee bench.txt

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# The smoke scenario on the embedded relay (no target in its TOML): seed, a
# 45 s two-step ramp, then the per-step, per-operation report on stdout and
# as JSON in $(REPORT). Exit 0 when every step held its limits, 99 when not.
run: build
	./bin/buzzload run -e BUZZ_REPORT=$(REPORT) $(SCENARIO)

clean:
	rm -rf bin bench.txt
