# roster — build, test, demo, bench. `make demo` and `make test` are the
# quick start; `make deps` installs what a fresh Debian machine lacks.
SHELL   := /bin/bash
PREFIX  ?= /usr/local
DESTDIR ?=
GO      ?= go
# The Go toolchain every build, test and lint runs with: go1.27.3, which the
# go command fetches through the Go module proxy on first use (about 76 MB,
# once per machine). go1.26.8 has standard-library vulnerabilities that the
# gateway reaches (govulncheck: a CONNECT desync among them), fixed in the
# newer release. `make GO_TOOLCHAIN=local` builds with the machine's own Go.
GO_TOOLCHAIN ?= go1.27.3
export GOTOOLCHAIN := $(GO_TOOLCHAIN)
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/roster-sh/roster/lib/cli.Version=$(VERSION) -X main.version=$(VERSION)

# Pure Go, static: everything but roster-box (roster-lock and roster-task are
# mounted into boxes and must run there).
PURE    := $(filter-out roster-box,$(notdir $(wildcard cmd/*)))
# roster-box: cgo, libseccomp and libc linked in statically, as runc's
# releases are (Debian's libseccomp-dev ships libseccomp.a): it is executed
# twice per box (the supervisor, then the container's init), and a static
# binary starts without the dynamic loader (0.5 ms and 40 page faults less
# each, measured here). netgo and osusergo keep glibc's NSS out of it.
BOX_TAGS    := seccomp netgo osusergo
BOX_LDFLAGS := -linkmode external -extldflags -static
# Debian packages the build, the tests and the benchmarks need.
BUILD_DEBS := gcc libseccomp-dev
TEST_DEBS  := $(BUILD_DEBS) groff-base rsync util-linux git prosody ngircd python3 chromium
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
PKG_pi         := @mariozechner/pi-coding-agent@$(PI_VERSION)
PKG_claude     := @anthropic-ai/claude-code@$(CLAUDE_VERSION)
# AGENTS names the agents deps-agents installs (default: both, which the
# tests need); `make demo` installs pi only, plus AGENTS (make demo
# AGENTS=claude).
AGENTS         ?=
AGENT_PKGS      = $(foreach a,$(or $(AGENTS),pi claude),$(or $(PKG_$(a)),$(error AGENTS: unknown agent $(a): pi or claude)))

# The linters, pinned, installed with `go install` through the Go module
# proxy into .tools/ (one folder per version, so a bump reinstalls).
# govulncheck reads a local copy of the Go vulnerability database: the
# golang.org/x/vulndb module at VULNDB_VERSION (the database as of that
# day), indexed with its own indexdb; bump VULNDB_VERSION to learn of newer
# vulnerabilities. A vulnerability our code reaches fails lint, in a
# required module or in the standard library (fixed by a newer Go:
# GO_TOOLCHAIN above; VULN_STDLIB=warn only warns of the latter).
TOOLS               := $(CURDIR)/.tools
STATICCHECK_VERSION := v0.8.2
GOVULNCHECK_VERSION := v1.9.0
VULNDB_VERSION      := v0.0.0-20261105234957-e22db6528018
STATICCHECK := $(TOOLS)/staticcheck@$(STATICCHECK_VERSION)/staticcheck
GOVULNCHECK := $(TOOLS)/govulncheck@$(GOVULNCHECK_VERSION)/govulncheck
INDEXDB     := $(TOOLS)/indexdb@$(VULNDB_VERSION)/indexdb
VULNDB      := $(TOOLS)/vulndb@$(VULNDB_VERSION)
VULN_STDLIB ?= fail
# make fuzz: how long each fuzz target runs.
FUZZTIME    ?= 5s

.PHONY: all build deps deps-build deps-test deps-bench deps-agents install-debs test test-short demo bench man-lint install clean fmt vet lint staticcheck vulncheck race fuzz

all: build

build: deps-build
	@mkdir -p bin
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/ $(addprefix ./cmd/,$(PURE))
	@if [ -d cmd/roster-box ]; then \
		echo "CGO_ENABLED=1 $(GO) build -tags '$(BOX_TAGS)' -ldflags '$(BOX_LDFLAGS)' -o bin/roster-box ./cmd/roster-box"; \
		CGO_ENABLED=1 $(GO) build -trimpath -tags '$(BOX_TAGS)' -ldflags '$(LDFLAGS) $(BOX_LDFLAGS)' -o bin/roster-box ./cmd/roster-box; \
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
	@test -z "$$(gofmt -l cmd lib internal tools bench 2>/dev/null)" || { gofmt -l cmd lib internal tools bench; echo "gofmt needed"; exit 1; }

# Every test: unit, end-to-end (real binaries, real boxes as root), fault,
# and man-page lint. Go test -p 2 matches the 2-core machines.
test: deps-test deps-agents vet
	$(GO) test -tags seccomp -count=1 -p 2 -timeout 40m ./...

# Static checks: vet and gofmt, staticcheck, govulncheck (see TOOLS above).
lint: vet staticcheck vulncheck

staticcheck: deps-build $(STATICCHECK)
	$(STATICCHECK) -tags seccomp ./...

vulncheck: deps-build $(GOVULNCHECK) $(VULNDB)/index/db.json
	@echo "$(GOVULNCHECK) -db file://$(VULNDB) -tags seccomp ./..."
	@set -o pipefail; $(GOVULNCHECK) -db file://$(VULNDB) -tags seccomp -format json ./... | \
		$(GO) run ./tools/vulncheck -stdlib $(VULN_STDLIB)

$(STATICCHECK):
	GOBIN=$(@D) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
$(GOVULNCHECK):
	GOBIN=$(@D) $(GO) install golang.org/x/vuln/cmd/govulncheck@$(GOVULNCHECK_VERSION)
$(INDEXDB):
	GOBIN=$(@D) $(GO) install golang.org/x/vulndb/cmd/indexdb@$(VULNDB_VERSION)
# The database's OSV files come in the vulndb module; go mod download runs
# in a scratch module of its own so that the project's go.sum is untouched.
$(VULNDB)/index/db.json: | $(INDEXDB)
	@mkdir -p $(TOOLS)/mod && cd $(TOOLS)/mod && { [ -f go.mod ] || $(GO) mod init roster-tools >/dev/null 2>&1; } && \
	src=$$($(GO) mod download -json golang.org/x/vulndb@$(VULNDB_VERSION) | sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p') && \
	[ -d "$$src/data/osv" ] || { echo "vulncheck: cannot get golang.org/x/vulndb@$(VULNDB_VERSION) (the vulnerability database) through the Go module proxy: govulncheck did not run"; exit 1; }; \
	rm -rf $(VULNDB).tmp && $(INDEXDB) -vulns "$$src/data/osv" -out $(VULNDB).tmp && rm -rf $(VULNDB) && mv $(VULNDB).tmp $(VULNDB)

# The unit tests of lib/ under the race detector (boxes included, as root).
race: deps-test
	$(GO) test -race -tags seccomp -count=1 -p 2 -timeout 30m ./lib/...

# Every fuzz target for FUZZTIME each; a failing input lands in the
# target's testdata/fuzz/ (tools/fuzz.sh).
fuzz: deps-build
	@bash tools/fuzz.sh $(FUZZTIME)

test-short:
	$(GO) test -tags seccomp -short -count=1 ./...

man-lint:
	@for m in man/*.[17]; do \
		out=$$(groff -mandoc -ww -z "$$m" 2>&1); \
		if [ -n "$$out" ]; then echo "$$m:"; echo "$$out"; exit 1; fi; \
	done; echo "man pages lint clean"

demo: build
	@$(MAKE) --no-print-directory deps-agents AGENTS="pi $(AGENTS)"
	@bash contrib/demo.sh

bench: deps-bench build
	@bash bench/run.sh

install: build
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man7
	install -m 0755 bin/* $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 0644 man/*.7 $(DESTDIR)$(PREFIX)/share/man/man7/

clean:
	rm -rf bin demo-home .tools
