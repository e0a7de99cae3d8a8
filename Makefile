# buzzload — see README.md. `make run` and `make test` do all set-up themselves.
GO       ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT   ?= $(shell git rev-parse --short HEAD 2>/dev/null)
LDFLAGS  := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
SCENARIO ?= scenarios/local-smoke.js
REPORT   ?= bin/buzz-report.json
NODE_DIR := testdata/node

.PHONY: all build test node-deps bench bench-scale bench-clients bench-soak bench-capacity lint fuzz run clean image k8s-e2e

all: build

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/buzzload ./cmd/buzzload

# The runner image (Dockerfile): static binary + busybox FROM scratch, built
# with podman's vfs driver and chroot isolation (scripts/image.sh).
IMAGE ?= buzzload:dev
image:
	GO='$(GO)' LDFLAGS='$(LDFLAGS)' scripts/image.sh $(IMAGE) out/image

# The manifests on a real single-node Kubernetes with the real k6-operator,
# offline, inside a network namespace of its own (scripts/k8s-e2e/run.sh;
# root, Debian's containerd, etcd-server, runc, containernetworking-plugins,
# conntrack). Kubernetes (kubectl too) is built from the Go module proxy outside
# this module and cached in ~/.cache/buzzload-k8s (cold: ~9 min).
k8s-e2e: image
	IMAGE='$(IMAGE)' scripts/k8s-e2e/run.sh

# The Node packages the cross-checks use (nostr-tools as an independent oracle).
node-deps: $(NODE_DIR)/node_modules/.installed
$(NODE_DIR)/node_modules/.installed: $(NODE_DIR)/package.json $(NODE_DIR)/package-lock.json
	cd $(NODE_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# Every test, the independent cross-checks and the fuzz seed corpora included.
test: node-deps
	BUZZLOAD_REQUIRE_NODE=1 $(GO) test -count=1 -timeout 15m ./...

# Benchmarks only (no tests): figures quoted in the README come from here
# (docs/benchmarks.md). One package at a time, BENCH_COUNT runs each, bounded
# by BENCH_TOTAL_TIMEOUT, then (EXTRA=1) empty constant-arrival-rate
# iterations through bin/buzzload (scripts/car-empty.sh) and the relay's
# ingest on one core (scripts/relay-percore.sh) and the CPU per publish and
# per delivery of a real run (scripts/publish-cpu.sh) and what --out cloud
# adds to a run (scripts/cloud-cpu.sh), the delivery ledger's and the
# drills' CPU at the defaults, with and without (scripts/ledger-cpu.sh,
# scripts/overhead-cpu.sh); about 32 minutes on 2 cores before those two
# (~2 and ~4 minutes a round by their headers). Raw output in bench.txt, medians/min/max in out/bench-report.md.
# Narrow it with e.g. `make bench BENCH=Sign BENCH_PKGS=./modules/nostr/ EXTRA=0`.
BENCH       ?= .
BENCH_PKGS  ?= ./...
BENCH_COUNT ?= 5
BENCH_TIME  ?= 1s
EXTRA       ?= 1
bench: build
	GO='$(GO)' BENCH='$(BENCH)' BENCH_PKGS='$(BENCH_PKGS)' BENCH_COUNT='$(BENCH_COUNT)' BENCH_TIME='$(BENCH_TIME)' \
		BENCH_TOTAL_TIMEOUT=20m BENCH_EXTRA_TIMEOUT=40m \
		BENCH_EXTRA="$(if $(filter 1,$(EXTRA)),scripts/car-empty.sh $(BENCH_COUNT) 5000 30000; scripts/relay-percore.sh $(BENCH_COUNT); scripts/publish-cpu.sh $(BENCH_COUNT) 500 30; scripts/cloud-cpu.sh $(BENCH_COUNT); scripts/ledger-cpu.sh 7 300 30; scripts/overhead-cpu.sh 7 10 60)" \
		scripts/bench.sh bench.txt out/bench-report.md

# The long ones, loopback only: the relay holding 10,000
# idle connections (skipped by `make bench` unless BUZZLOAD_BENCH_SCALE=1;
# it needs 2 × 10,000 descriptors across the relay and its client process,
# so the soft limit is raised to the hard one), then the all-in memory of a
# connected human in a real `buzzload run` (scripts/allin-human.sh), then
# 19,000 connected humans in one runner and a 5,000-member channel at 14
# messages/s (scripts/scale-humans.sh), and the RSS of an idle VU between
# 1,000 and 4,000 VUs (scripts/idle-vu.sh); not timed since the scale runs were added (each extra command has its own 20-minute cap).
# Raw output in out/bench-scale.txt, medians in out/bench-scale-report.md.
# The soak (issue 43, docs/benchmarks.md "Long runs"): local-wide with the
# delivery ledger against `buzzload relay` in its own process, held for
# SOAK (30m by default; SOAK=2h30m is the recorded run, SOAK=12h the long
# one); fails when the runner's RSS grows more than 10 % after the warm-up.
SOAK ?= 30m
# The capacity search end to end against a synthetic knee (issue 44,
# docs/benchmarks.md "Capacity"): one process and three shards, 3 times
# each (about 10 minutes); the knee must be found within the resolution.
bench-capacity: build
	mkdir -p out && BUZZLOAD_BENCH_CAPACITY=1 $(GO) test -run '^$$' -bench BenchmarkCapacitySyntheticKnee -benchtime 1x -count 3 -timeout 30m ./cmd/buzzload/ | tee out/bench-capacity.txt

bench-soak: build
	scripts/soak.sh $(SOAK) out/soak

# PRESENCE_HUMANS and PRESENCE_HOLD size the presence-only run (issue 49
# goal 1: 100,000 humans held 10 minutes, 100 a VU); its `bench-scale:` line
# is the target's last. Each human is a descriptor in the runner and in the
# relay: where the hard limit cannot be raised (no CAP_SYS_RESOURCE) the run
# is cut to what it holds, and says so.
PRESENCE_HUMANS ?= 100000
PRESENCE_HOLD ?= 600
bench-scale: build
	ulimit -n $$(ulimit -Hn) && BUZZLOAD_BENCH_SCALE=1 GO='$(GO)' BENCH='^BenchmarkScale' \
		BENCH_PKGS='./modules/relay/' BENCH_COUNT='$(BENCH_COUNT)' BENCH_TIME=1x \
		BENCH_PKG_TIMEOUT=8m BENCH_TOTAL_TIMEOUT=10m BENCH_EXTRA="scripts/allin-human.sh $(BENCH_COUNT) 100 1000; scripts/scale-humans.sh humans 3 19000 60; scripts/scale-humans.sh wide 3 5000 60 14; scripts/idle-vu.sh $(BENCH_COUNT) 1000 4000 20; scripts/plan-scale.sh 3 10 100 current; scripts/scale-humans.sh presence 1 $(PRESENCE_HUMANS) $(PRESENCE_HOLD)" \
		BENCH_EXTRA_TIMEOUT=30m scripts/bench.sh out/bench-scale.txt out/bench-scale-report.md; \
		st=$$?; grep '^bench-scale:' out/bench-scale.txt | tail -1; exit $$st

# Clients per core (issue 16, docs/benchmarks.md "Clients per core"): the
# signing ratio, then in real runs against `buzzload relay` in its own
# process the CPU per publish and per delivery beside a signature, the
# all-in human and the idle VU, and the two scale runs (relay and runner
# pinned to their own CPUs); about 30 minutes (its first run, 2026-12-02: 23 minutes up to the third 19,000-human run). RUNS runs of each.
# Raw output in out/bench-clients.txt, medians in out/bench-clients-report.md.
RUNS ?= 3
bench-clients: build
	ulimit -n $$(ulimit -Hn) && GO='$(GO)' BENCH='^BenchmarkSignRatio$$' BENCH_PKGS='./modules/nostr/' BENCH_COUNT='$(RUNS)' \
		BENCH_TIME=2000x BENCH_TOTAL_TIMEOUT=5m \
		BENCH_EXTRA="scripts/publish-cpu.sh $(RUNS) 500 30; scripts/allin-human.sh $(RUNS) 100 1000; scripts/idle-vu.sh $(RUNS) 1000 4000 20; scripts/scale-humans.sh wide $(RUNS) 5000 60 14; scripts/scale-humans.sh humans $(RUNS) 19000 60" \
		BENCH_EXTRA_TIMEOUT=20m scripts/bench.sh out/bench-clients.txt out/bench-clients-report.md

# Every fuzz target for FUZZTIME each (default 60s; FUZZTIME=10m for a deep
# run, recorded in docs/benchmarks.md), one after the other; per-target
# executions and rate in out/fuzz.txt (docs/security.md).
FUZZTIME ?= 60s
fuzz:
	GO='$(GO)' FUZZTIME='$(FUZZTIME)' scripts/fuzz.sh

# gofmt, go vet and staticcheck (pinned, built from the module proxy outside
# go.mod) fail it; `duplicates` over the change since LINT_BASE is printed for
# the reader, never a failure (where the command exists).
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
LINT_BASE   ?= HEAD~1
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	@if command -v duplicates >/dev/null; then duplicates --change --base $(LINT_BASE) || true; fi

# The smoke scenario on the embedded relay (no target in its TOML): seed, a
# 45 s two-step ramp, then the per-step, per-operation report on stdout and
# as JSON in $(REPORT). Exit 0 when every step held its limits, 99 when not.
run: build
	./bin/buzzload run -e BUZZ_REPORT=$(REPORT) $(SCENARIO)

clean:
	rm -rf bin bench.txt out
