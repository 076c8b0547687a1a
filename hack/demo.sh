#!/usr/bin/env bash
# The main job on the built-in sandbox. First the offline part, seconds:
# `bootstrap render` of what step 1 applies (with the gates proving the
# overlay landed) and `bootstrap check` of the fixture repository. Then the
# sandbox's binaries are built when missing (one progress line per binary;
# skipped when cached; kubectl is left for the e2e suite), a real local control
# plane with real Flux controllers comes up, Flux is bootstrapped into it the
# way the homelab does (v2.4.0 with the image extras and the strict overlay),
# then the whole bring-up with `bootstrap up` (upgrade to v2.9.5, age key,
# dev's cluster root), an unchanged re-run, and tear down.
#
#   hack/demo.sh           the demo (make demo runs `hack/demo.sh --intro`, then make build, then this)
#   hack/demo.sh --intro   the line saying how long this run will take; when sandbox binaries are
#                          missing, starts their module downloads in the background
set -euo pipefail
cd "$(dirname "$0")/.."

# How long the first `make demo` takes on a fresh 2-core machine (empty Go
# module, Go build and sandbox caches, nothing else running), from
# hack/sandbox/measure-cold.sh. The one place this figure lives: README.md
# and docs/sandbox.md quote it, so change it there too.
FIRST_RUN_MIN=32
FIRST_RUN_MEASURED="31m39s, measured before the module prefetch"

if [[ "${1:-}" == "--intro" ]]; then
	if [[ -z "$(bash hack/sandbox/build.sh --missing --demo)" ]]; then
		echo "== make demo: the sandbox is already built; this run takes about a minute"
	else
		echo "== make demo: the first run on a fresh 2-core machine takes ≈ ${FIRST_RUN_MIN} min ($FIRST_RUN_MEASURED): build the tool, download and build the sandbox from source (a line per binary), then the demo; later runs skip the builds (seconds) and take about a minute in all"
		bash hack/sandbox/build.sh --prefetch-start --tool --demo
	fi
	exit 0
fi

state="${BOOTSTRAP_DEMO_STATE:-$(mktemp -d /tmp/bootstrap-demo.XXXXXX)}"
# The sandbox wants a directory of its own (new or empty); the demo's files
# (the render, the reports, the Git server) sit beside it.
sb="$state/sandbox"
extras=(--components-extra image-reflector-controller,image-automation-controller)

git_pid=""
down() {
	[[ -n "$git_pid" ]] && kill "$git_pid" 2>/dev/null && wait "$git_pid" 2>/dev/null
	bin/sandbox down --state "$sb" >/dev/null 2>&1 || true
}
trap down EXIT

echo "== offline (no cluster, no network): bootstrap render — what step 1 applies, and the gates proving the overlay landed"
bin/bootstrap render --flux-version v2.4.0 "${extras[@]}" --output-dir "$state/render"

echo
echo "== offline: bootstrap check of the fixture repository (testdata/homelab, clusters/dev) — what kustomize-controller would do wrong with it"
bin/bootstrap check --repo testdata/homelab --env dev

echo
echo "== sandbox binaries (built from source when missing: most of a first run's ≈ ${FIRST_RUN_MIN} min, one line per binary; cached afterwards)"
bash hack/sandbox/build.sh --demo

echo
echo "== sandbox: starting (state $sb)"
bin/sandbox up --state "$sb" --bin "$(bash hack/sandbox/build.sh --print)"
export KUBECONFIG="$sb/kubeconfig"

echo
echo "== bootstrap controllers --dry-run (the plan, nothing applied)"
bin/bootstrap controllers --flux-version v2.4.0 "${extras[@]}" --dry-run

echo
echo "== bootstrap controllers (apply, watch the rollouts, prove the flags are live)"
bin/bootstrap controllers --flux-version v2.4.0 "${extras[@]}" --report-json "$state/controllers.json"

echo
echo "== the homelab repository on a sandbox Git server (dev's source points there; a SOPS Secret encrypted to a fresh age key)"
go build -o bin/demo-homelab ./hack/demo/homelab
home="$state/homelab"
bin/demo-homelab --dir "$home" &
git_pid=$!
for _ in $(seq 100); do [[ -f "$home/ready" ]] && break; sleep 0.1; done
[[ -f "$home/ready" ]] || { echo "demo: the Git server did not come up" >&2; exit 1; }

echo
echo "== bootstrap up: the whole bring-up in one run — upgrade to Flux v2.9.5 (--migrate-crds), the age key"
echo "   from stdin (proven against the repository, then installed), the dev cluster root from the Git server"
bin/bootstrap up --repo "$home/repo" --env dev --flux-version v2.9.5 "${extras[@]}" --migrate-crds \
	--age-key-file - --timeout 5m --report-json "$state/up.json" < "$home/age.key"

echo
echo "== bootstrap up again (an unchanged re-run: nothing applied, nothing restarted)"
bin/bootstrap up --repo "$home/repo" --env dev --flux-version v2.9.5 "${extras[@]}" \
	--age-key-file - -o json < "$home/age.key" | grep -E '^  "(changed|verdict|exitCode)"'

echo
echo "== the controllers the sandbox runs, started from the Deployments' args"
sleep 2
grep -h 'msg="controller started"' "$sb/logs/runner.log" 2>/dev/null | tail -2 | sed 's/^.*controller=/  /' || true

echo
echo "demo: done; tearing the sandbox down"
