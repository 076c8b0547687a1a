# Sandbox targets: a real local control plane with real Flux controllers.
# Included from the root Makefile; run from the repository root.

GO            ?= go
SANDBOX_STATE ?= $(or $(BOOTSTRAP_SANDBOX_STATE),/tmp/bootstrap-sandbox)
SANDBOX_CMD   ?= bin/sandbox
E2E_TIMEOUT   ?= 45m
# Every e2e run takes its tests in a random order and prints the seed
# (-test.shuffle N); E2E_SHUFFLE=N replays that order.
E2E_SHUFFLE   ?= on

.PHONY: sandbox-deps sandbox-build sandbox-up sandbox-down e2e gauntlet

## sandbox-deps: Debian packages the sandbox needs (git); skips apt when present
sandbox-deps:
	bash hack/sandbox/install-deps.sh

## sandbox-build: build missing sandbox binaries (all nine, kubectl included) into the versioned cache, their modules downloaded in the background meanwhile (most of a cold first run, see docs/sandbox.md#measured-here; seconds when cached)
sandbox-build:
	bash hack/sandbox/build.sh

$(SANDBOX_CMD): FORCE
	$(GO) build -o $@ ./cmd/sandbox

.PHONY: FORCE
FORCE:

## sandbox-up: start the sandbox in the background; prints KUBECONFIG
sandbox-up: sandbox-deps sandbox-build $(SANDBOX_CMD)
	$(SANDBOX_CMD) up --state $(SANDBOX_STATE) --bin "$$(bash hack/sandbox/build.sh --print)"

## sandbox-down: stop the sandbox started by sandbox-up
sandbox-down: $(SANDBOX_CMD)
	$(SANDBOX_CMD) down --state $(SANDBOX_STATE)

## e2e: the end-to-end suite against fresh sandboxes, in a random order (builds what is missing)
e2e: sandbox-deps sandbox-build
	rm -f gauntlet/report.md
	BOOTSTRAP_SANDBOX_BIN="$$(bash hack/sandbox/build.sh --print)" \
		$(GO) test -count=1 -tags e2e -shuffle=$(E2E_SHUFFLE) -timeout $(E2E_TIMEOUT) -v ./test/e2e/ 2>&1 | tee $${E2E_LOG:-/tmp/bootstrap-e2e.log}; \
		rc=$${PIPESTATUS[0]}; if test -f gauntlet/report.md; then echo "gauntlet (gauntlet/report.md):"; sed -n '/^| #/,/^$$/p' gauntlet/report.md; tail -n 1 gauntlet/report.md; fi; exit $$rc

GAUNTLET_OUT ?= $(CURDIR)/gauntlet

## gauntlet: the lifecycle run on fresh sandboxes; writes $(GAUNTLET_OUT)/report.md, junit.xml, timeline.svg (BREAK=<stage> breaks one stage on purpose)
gauntlet: sandbox-deps sandbox-build
	BOOTSTRAP_SANDBOX_BIN="$$(bash hack/sandbox/build.sh --print)" GAUNTLET_OUT="$(GAUNTLET_OUT)" BREAK="$(BREAK)" \
		$(GO) test -count=1 -tags e2e -timeout 30m -run '^TestGauntlet$$' -v ./test/e2e/ 2>&1 | tee $${GAUNTLET_LOG:-/tmp/bootstrap-gauntlet.log}; \
		rc=$${PIPESTATUS[0]}; test -f "$(GAUNTLET_OUT)/report.md" && cat "$(GAUNTLET_OUT)/report.md"; exit $$rc
