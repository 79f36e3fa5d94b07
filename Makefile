# roster — build, test, demo, bench. `make demo` and `make test` are the
# quick start; `make deps` installs what a fresh Debian machine lacks.
SHELL   := /bin/bash
PREFIX  ?= /usr/local
DESTDIR ?=
GO      ?= go
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/roster-sh/roster/lib/cli.Version=$(VERSION) -X main.version=$(VERSION)

# Pure Go, static: everything but roster-box (roster-lock and roster-task are
# mounted into boxes and must run there).
PURE    := $(filter-out roster-box,$(notdir $(wildcard cmd/*)))
# Debian packages the build, the tests and the benchmarks need.
BUILD_DEBS := gcc libseccomp-dev
TEST_DEBS  := $(BUILD_DEBS) groff-base rsync util-linux
BENCH_DEBS := $(TEST_DEBS) runc bubblewrap hyperfine
# The real agent CLIs the tests and the demo run in boxes, from the npm
# registry into the host's /usr (boxes mount it read-only, node included:
# /usr/bin/node). Pinned to the newest releases whose engines allow the
# machine's Node 20 and that were run here: pi 0.73.1 (engines >=20.6.0);
# Claude Code 2.1.197, the last before its engines asked for Node >=22 (it
# ships a native binary, so Node matters only to its installer).
AGENT_PREFIX   ?= /usr
PI_VERSION     := 0.73.1
CLAUDE_VERSION := 2.1.197
AGENT_PKGS     := @mariozechner/pi-coding-agent@$(PI_VERSION) @anthropic-ai/claude-code@$(CLAUDE_VERSION)

.PHONY: all build deps deps-build deps-test deps-bench deps-agents install-debs test test-short demo bench man-lint install clean fmt vet

all: build

build: deps-build
	@mkdir -p bin
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/ $(addprefix ./cmd/,$(PURE))
	@if [ -d cmd/roster-box ]; then \
		echo "CGO_ENABLED=1 $(GO) build -tags seccomp -o bin/roster-box ./cmd/roster-box"; \
		CGO_ENABLED=1 $(GO) build -trimpath -tags seccomp -ldflags '$(LDFLAGS)' -o bin/roster-box ./cmd/roster-box; \
	fi

# Install missing Debian packages (root only; a no-op when all are present).
deps: deps-bench deps-agents
deps-build:
	@$(MAKE) --no-print-directory install-debs DEBS="$(BUILD_DEBS)"
deps-test:
	@$(MAKE) --no-print-directory install-debs DEBS="$(TEST_DEBS)"
deps-bench:
	@$(MAKE) --no-print-directory install-debs DEBS="$(BENCH_DEBS)"
# Installs each pinned agent whose installed version differs (a no-op when
# all are in place; root only). Needs node >= 20.6 and npm.
deps-agents:
	@command -v npm >/dev/null || $(MAKE) --no-print-directory install-debs DEBS="nodejs npm"
	@node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a==20&&b>=6)?0:1)' || \
		{ echo "node $$(node --version) is too old for pi $(PI_VERSION) (needs >= 20.6)"; exit 1; }
	@missing=""; for p in $(AGENT_PKGS); do name=$${p%@*}; want=$${p##*@}; \
		have=$$(node -p "require('$(AGENT_PREFIX)/lib/node_modules/$$name/package.json').version" 2>/dev/null); \
		[ "$$have" = "$$want" ] || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ]; then \
			echo "installing into $(AGENT_PREFIX):$$missing"; \
			npm install -g --prefix $(AGENT_PREFIX) --no-fund --no-audit --loglevel=error $$missing; \
		else echo "missing agents (install as root: make deps-agents):$$missing"; exit 1; fi; \
	fi
install-debs:
	@missing=""; for p in $(DEBS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ]; then \
			echo "installing:$$missing"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
		else echo "missing Debian packages (install as root):$$missing"; exit 1; fi; \
	fi

vet:
	$(GO) vet -tags seccomp ./...
	@test -z "$$(gofmt -l cmd lib tools bench 2>/dev/null)" || { gofmt -l cmd lib tools bench; echo "gofmt needed"; exit 1; }

# Every test: unit, end-to-end (real binaries, real boxes as root), fault,
# and man-page lint. Go test -p 2 matches the 2-core machines.
test: deps-test deps-agents vet
	$(GO) test -tags seccomp -count=1 -p 2 -timeout 40m ./...

test-short:
	$(GO) test -tags seccomp -short -count=1 ./...

man-lint:
	@for m in man/*.[17]; do \
		out=$$(groff -mandoc -ww -z "$$m" 2>&1); \
		if [ -n "$$out" ]; then echo "$$m:"; echo "$$out"; exit 1; fi; \
	done; echo "man pages lint clean"

demo: build deps-agents
	@bash contrib/demo.sh

bench: deps-bench build
	@bash bench/run.sh

install: build
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man7
	install -m 0755 bin/* $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 0644 man/*.7 $(DESTDIR)$(PREFIX)/share/man/man7/

clean:
	rm -rf bin demo-home
