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

.PHONY: all build deps deps-build deps-test deps-bench install-debs test test-short demo bench man-lint install clean fmt vet

all: build

build: deps-build
	@mkdir -p bin
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/ $(addprefix ./cmd/,$(PURE))
	@if [ -d cmd/roster-box ]; then \
		echo "CGO_ENABLED=1 $(GO) build -tags seccomp -o bin/roster-box ./cmd/roster-box"; \
		CGO_ENABLED=1 $(GO) build -trimpath -tags seccomp -ldflags '$(LDFLAGS)' -o bin/roster-box ./cmd/roster-box; \
	fi

# Install missing Debian packages (root only; a no-op when all are present).
deps: deps-bench
deps-build:
	@$(MAKE) --no-print-directory install-debs DEBS="$(BUILD_DEBS)"
deps-test:
	@$(MAKE) --no-print-directory install-debs DEBS="$(TEST_DEBS)"
deps-bench:
	@$(MAKE) --no-print-directory install-debs DEBS="$(BENCH_DEBS)"
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
test: deps-test vet
	$(GO) test -tags seccomp -count=1 -p 2 -timeout 40m ./...

test-short:
	$(GO) test -tags seccomp -short -count=1 ./...

man-lint:
	@for m in man/*.[17]; do \
		out=$$(groff -mandoc -ww -z "$$m" 2>&1); \
		if [ -n "$$out" ]; then echo "$$m:"; echo "$$out"; exit 1; fi; \
	done; echo "man pages lint clean"

demo: build
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
