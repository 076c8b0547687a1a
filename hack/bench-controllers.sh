#!/usr/bin/env bash
# Step 1 side by side, in one run, on fresh sandboxes: the shell path the
# homelab used (kubectl apply --server-side of the same render, then
# kubectl rollout status) against `bootstrap controllers` (gates, plan,
# staged apply, kstatus watch, after gates). Fresh install and an unchanged
# re-run for each. Reports wall time, peak RSS and API requests. Asserts
# nothing: numbers for the README.
set -euo pipefail
cd "$(dirname "$0")/.."

bin="$(bash hack/sandbox/build.sh --print)"
if [[ ! -x "$bin/kubectl" ]]; then  # built by hack/sandbox/build.sh; kept for older caches
	echo "bench: building kubectl into $bin (once)" >&2
	(cd hack/sandbox/tools/kubernetes && GOTOOLCHAIN=local go build -ldflags "-s -w" -o "$bin/kubectl" k8s.io/kubernetes/cmd/kubectl)
fi
command -v /usr/bin/time >/dev/null || { apt-get update -qq && apt-get install -y -qq time >/dev/null; }
make -s build >/dev/null
go build -o bin/sandbox ./cmd/sandbox

extras=(--flux-version v2.9.5 --components-extra image-reflector-controller,image-automation-controller)
work="$(mktemp -d)"
bin/bootstrap render "${extras[@]}" --output-dir "$work" 2>/dev/null

# measure LABEL CMD...: wall seconds and peak RSS (MiB) of CMD.
measure() {
	local label="$1"
	shift
	/usr/bin/time -f "%e %M" -o "$work/time" "$@" >"$work/$label.out" 2>"$work/$label.err"
	read -r secs kib <"$work/time"
	printf '%s %s %d\n' "$label" "$secs" $((kib / 1024))
}

kubectl_path() {
	"$bin/kubectl" apply --server-side --force-conflicts -f "$work/gotk-components.yaml" -v=6 2>&1 | grep -c '"Response" verb=' >"$work/kubectl-requests" || true
	"$bin/kubectl" -n flux-system rollout status deployment --timeout 5m -v=6 2>&1 | grep -c '"Response" verb=' >>"$work/kubectl-requests" || true
}
export -f kubectl_path
export bin work

results=()
for tool in kubectl bootstrap; do
	state="$(mktemp -d)"
	bin/sandbox up --state "$state" --bin "$bin" >/dev/null
	export KUBECONFIG="$state/kubeconfig"
	for run in fresh rerun; do
		if [[ $tool == kubectl ]]; then
			line="$(measure "kubectl-$run" bash -c kubectl_path)"
			reqs=$(awk "{s+=\$1} END {print s}" "$work/kubectl-requests")
		else
			line="$(measure "bootstrap-$run" bin/bootstrap controllers "${extras[@]}" -o json)"
			reqs=$(sed -n 's/.*"apiRequests": "\([0-9]*\)".*/\1/p' "$work/bootstrap-$run.out")
		fi
		results+=("$line $reqs")
	done
	bin/sandbox down --state "$state" >/dev/null
done

echo "| path | run | wall (s) | peak RSS (MiB) | API requests |"
echo "|---|---|---|---|---|"
for r in "${results[@]}"; do
	read -r label secs mib reqs <<<"$r"
	echo "| ${label%-*} | ${label#*-} | $secs | $mib | $reqs |"
done
rm -rf "$work"
