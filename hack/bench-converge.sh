#!/usr/bin/env bash
# Step 4 side by side, in one run, on fresh sandboxes with the same fixture
# (testdata/homelab: 11 Kustomizations over 6 levels, two GitRepositories):
# after `bootstrap controllers`, `age-key` and `sync`, how long until every
# Kustomization is Ready at its source's revision
#   controllers: the controllers alone (kustomize-controller's 30 s
#                --requeue-dependency), observed by `bootstrap converge --nudge=false`
#   nudge:       `bootstrap converge --nudge`
# Reports wall time, nudges and the critical path. Asserts nothing: numbers
# for the README.
set -euo pipefail
cd "$(dirname "$0")/.."

bin="$(bash hack/sandbox/build.sh --print)"
make -s build >/dev/null
go build -o bin/sandbox ./cmd/sandbox
go build -o bin/demo-homelab ./hack/demo/homelab
work="$(mktemp -d)"
fact() { sed -n "s/.*\"$1\": \"\([^\"]*\)\".*/\1/p" "$2"; }

results=()
for mode in controllers nudge; do
	state="$(mktemp -d)"
	bin/sandbox up --state "$state" --bin "$bin" >/dev/null
	export KUBECONFIG="$state/kubeconfig"
	bin/bootstrap controllers -o json >"$work/$mode-controllers.json"
	home="$state/homelab"
	bin/demo-homelab --dir "$home" >/dev/null &
	git_pid=$!
	for _ in $(seq 100); do [[ -f "$home/ready" ]] && break; sleep 0.1; done
	[[ -f "$home/ready" ]] || { echo "bench: the Git server did not come up" >&2; exit 1; }
	bin/bootstrap age-key --age-key-file - --repo "$home/repo" --path clusters/dev -o json <"$home/age.key" >"$work/$mode-agekey.json"
	bin/bootstrap sync --repo "$home/repo" --env dev --timeout 5m --converge=false -o json >"$work/$mode-sync.json"
	nudge=false
	[[ $mode == nudge ]] && nudge=true
	start=$(date +%s.%N)
	code=0
	bin/bootstrap converge --repo "$home/repo" --env dev --timeout 10m --nudge="$nudge" --report-json "$work/$mode.json" 2>"$work/$mode.err" || code=$?
	end=$(date +%s.%N)
	results+=("$mode $(printf '%.1f' "$(echo "$end - $start" | bc)") $code $(fact converge.nudges "$work/$mode.json")|$(fact converge.critical-path "$work/$mode.json")")
	kill "$git_pid" 2>/dev/null || true
	wait "$git_pid" 2>/dev/null || true
	bin/sandbox down --state "$state" >/dev/null
done

echo "| path | converge wall (s) | exit | nudges | critical path |"
echo "|---|---|---|---|---|"
for r in "${results[@]}"; do
	read -r mode secs code rest <<<"$r"
	echo "| $mode | $secs | $code | ${rest%%|*} | ${rest#*|} |"
done
for mode in controllers nudge; do
	echo
	echo "== bootstrap converge --nudge=$([[ $mode == nudge ]] && echo true || echo false): progress, timeline, report (stderr)"
	cat "$work/$mode.err"
done
rm -rf "$work"
