# bootstrap — build, test, benchmark. Pinned versions come from versions.env.
SHELL := bash
include versions.env

GO  ?= go
BIN ?= bin/bootstrap

.PHONY: all build generate check-generated test unit bench fmt vet demo clean docs man dist dist-check

all: build

## generate: refresh the committed Flux release bundles after a change to versions.env (a no-op while the pin matches flux/.stamp); commit the result. No build needs it
generate:
	$(GO) generate ./pkg/components/bundles

## check-generated: regenerate the Flux release bundles into a temporary directory and fail unless the committed ones are byte-identical (about a second with the module cached)
check-generated:
	$(GO) run ./internal/genbundles -check -out pkg/components/bundles/flux

## build: the bootstrap binary in $(BIN) (the committed Flux release bundles embedded; no generate step)
build:
	$(GO) build -o $(BIN) ./cmd/bootstrap

## unit: gofmt, go vet and the unit tests (no cluster needed)
unit:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet ./...
	$(GO) test -count=1 ./...

## test: everything CI runs: unit tests, the committed bundles against versions.env, the reproducible-release check, then the end-to-end suite on the sandbox
test: unit
	$(MAKE) check-generated
	$(MAKE) dist-check
	$(MAKE) e2e

## bench: render benchmarks (time, allocations, peak RSS)
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 3 ./internal/customize/

## docs: regenerate the reference (docs/reference) from the code; a unit test fails when it is stale
docs:
	$(GO) run ./cmd/bootstrap docgen --dir docs/reference

## man: man pages for every command into bin/man (from the same source as docs/reference)
man:
	$(GO) run ./cmd/bootstrap docgen --man-dir bin/man

## dist: release archives in dist/ — linux and darwin × amd64 and arm64, reproducible (-trimpath, CGO_ENABLED=0, no build timestamps), SHA256SUMS, provenance (go version -m); VERSION=… overrides git describe
dist:
	bash hack/dist.sh dist

## dist-check: two builds of this commit (one platform) give byte-identical archives; DIST_CHECK_COLD=1 rebuilds the second from an empty build cache
dist-check:
	bash hack/dist-check.sh

## fuzz: run every native fuzz target (the parsers a repository or a flag feeds) for FUZZTIME each, one after the other; not in CI. A crasher is kept in the package's testdata/fuzz/FuzzX/ and fails `go test` until fixed
FUZZTIME ?= 10m
FUZZ_TARGETS := \
	./internal/check:FuzzSubstExpressions \
	./internal/check:FuzzPolicy \
	./internal/fluxrepo:FuzzMentionsVar \
	./internal/fluxrepo:FuzzSyncDeclarations \
	./internal/safeio:FuzzAliasBomb \
	./internal/safeio:FuzzBoundedRead \
	./internal/fluxrelease:FuzzResolve \
	./internal/fluxrelease:FuzzVersionsParse \
	./internal/bootstrapfiles:FuzzNeutralize
.PHONY: fuzz
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "== $$fn ($$pkg, $(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin dist

-include hack/sandbox/sandbox.mk

## demo: the main job — render and check offline (seconds), build the sandbox when missing (one line per binary), sandbox up, bootstrap Flux into it, re-run, tear down
# demo-intro comes first: the line saying how long this run takes and, when
# sandbox binaries are missing, their module downloads started in the
# background so they run while `build` compiles. hack/demo.sh runs
# hack/sandbox/build.sh --demo itself, after the offline part; the ID tells it
# which prefetch is this run's.
demo: export BOOTSTRAP_SANDBOX_PREFETCH_ID := demo-$(shell date +%s%N)
demo: demo-intro build sandbox-deps $(SANDBOX_CMD)
	bash hack/demo.sh

.PHONY: demo-intro
demo-intro:
	@bash hack/demo.sh --intro
