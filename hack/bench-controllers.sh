#!/usr/bin/env bash
# Step 1 side by side, in one run, on fresh sandboxes: the shell path the
# homelab used (kubectl apply --server-side of the same render, then
# kubectl rollout status) against `bootstrap controllers` (gates, plan,
# staged apply, kstatus watch, after gates). A fresh install and an
# unchanged re-run for each, in PAIRS alternating pairs (default 3; the
# tool that goes first alternates, so the machine's drift does not favour
# one). Reports each run, then the medians of wall time, peak RSS and API
# requests with bootstrap's ratio to kubectl, and where the requests go (by
# verb, from the last pair). Asserts nothing: numbers for the docs.
#
# VS=upstream compares `bootstrap controllers` with itself built with
# -tags bench_upstream_staged (internal/apply/bench_upstream.go: the staged
# apply is ssa's ApplyAllStaged), the same pairs on fresh sandboxes, to
# measure what the fork applyStaged saves. UPSTREAM_WAIT_INTERVAL and
# UPSTREAM_SSA_CONCURRENCY set upstream's knobs (default: as the tool
# configures ssa, a 2 s poll and one object at a time).
set -euo pipefail
cd "$(dirname "$0")/.."

pairs="${PAIRS:-3}"
base="${VS:-kubectl}"
[[ $base == kubectl || $base == upstream ]] || { echo "bench: VS=$base: want kubectl or upstream" >&2; exit 2; }
bin="$(bash hack/sandbox/build.sh --print)"
if [[ $base == kubectl && ! -x "$bin/kubectl" ]]; then # make demo leaves kubectl unbuilt; build it as make e2e would
	echo "bench: building kubectl into $bin (once)" >&2
	bash hack/sandbox/build.sh kubectl >&2
fi
command -v /usr/bin/time >/dev/null || { apt-get update -qq && apt-get install -y -qq time >/dev/null; }
make -s build >/dev/null
go build -o bin/sandbox ./cmd/sandbox
if [[ $base == upstream ]]; then go build -tags bench_upstream_staged -o bin/bootstrap-upstream-staged ./cmd/bootstrap; fi

extras=(--flux-version v2.9.5 --components-extra image-reflector-controller,image-automation-controller)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
bin/bootstrap render "${extras[@]}" --output-dir "$work" 2>/dev/null

# kubectl_path: the shell path; its -v=6 response lines go to $work/kubectl.v6.
kubectl_path() {
	"$bin/kubectl" apply --server-side --force-conflicts -f "$work/gotk-components.yaml" -v=6 >"$work/kubectl.v6" 2>&1
	"$bin/kubectl" -n flux-system rollout status deployment --timeout 5m -v=6 >>"$work/kubectl.v6" 2>&1
}
export -f kubectl_path
export bin work

# kubectl_verbs: kubectl's requests by verb, named as bootstrap names them
# (internal/kube.Verb): get, list (a collection), watch, apply, dry-run …
kubectl_verbs() {
	grep '"Response" verb=' "$work/kubectl.v6" | sed -E 's/.* verb="([A-Z]+)" url="([^"]*)".*/\1 \2/' | awk '
	{
		verb = $1; url = $2; q = ""
		if (index(url, "?")) { q = substr(url, index(url, "?") + 1); url = substr(url, 1, index(url, "?") - 1) }
		sub(/^https?:\/\/[^\/]*/, "", url)
		if (verb == "GET") {
			if (q ~ /(^|&)watch=(true|1)/) v = "watch"
			else {
				n = split(url, p, "/"); s = 0
				if (p[2] == "api") s = 4; else if (p[2] == "apis") s = 5
				rest = (s && n >= s) ? n - s + 1 : 0
				if (rest >= 2 && p[s] == "namespaces") { rest = (rest == 2) ? -1 : rest - 2 }
				v = (rest == 1) ? "list" : "get"
			}
		} else if (q ~ /dryRun=/) v = "dry-run"
		else if (verb == "PATCH") v = "apply"
		else if (verb == "POST") v = "create"
		else if (verb == "PUT") v = "update"
		else v = tolower(verb)
		c[v]++; t++
	}
	END { s = ""; for (k in c) s = s (s ? ", " : "") k " " c[k]; print t "|" s }' | {
		IFS='|' read -r total verbs
		echo "$total|$(tr ',' '\n' <<<"$verbs" | sed 's/^ //' | sort | paste -sd, - | sed 's/,/, /g')"
	}
}

# measure TOOL RUN: one run on the current sandbox; prints the tab-separated
# TOOL RUN WALL RSS_MIB REQUESTS VERBS.
measure() {
	local tool="$1" run="$2" secs kib reqs
	if [[ $tool == kubectl ]]; then
		/usr/bin/time -f "%e %M" -o "$work/time" bash -c kubectl_path
		reqs="$(kubectl_verbs)"
	else
		local exe=bin/bootstrap
		[[ $tool == upstream ]] && exe=bin/bootstrap-upstream-staged
		BOOTSTRAP_BENCH_WAIT_INTERVAL="${UPSTREAM_WAIT_INTERVAL:-}" BOOTSTRAP_BENCH_SSA_CONCURRENCY="${UPSTREAM_SSA_CONCURRENCY:-}" \
			/usr/bin/time -f "%e %M" -o "$work/time" "$exe" controllers "${extras[@]}" -o json >"$work/out.json" 2>"$work/err" ||
			{ echo "bench: $tool $run failed:" >&2; cat "$work/err" >&2; exit 1; }
		reqs="$(sed -n 's/.*"apiRequests": "\([0-9]*\)".*/\1/p' "$work/out.json")|$(sed -n 's/.*"apiRequestsByVerb": "\([^"]*\)".*/\1/p' "$work/out.json")"
	fi
	read -r secs kib <"$work/time"
	printf '%s\t%s\t%s\t%s\t%s\n' "$tool" "$run" "$secs" $((kib / 1024)) "${reqs/|/$'\t'}"
}

: >"$work/runs"
for ((pair = 1; pair <= pairs; pair++)); do
	order=("$base" bootstrap)
	((pair % 2 == 0)) && order=(bootstrap "$base")
	for tool in "${order[@]}"; do
		state="$(mktemp -d)"
		bin/sandbox up --state "$state" --bin "$bin" >/dev/null
		export KUBECONFIG="$state/kubeconfig"
		for run in fresh rerun; do
			line="$(measure "$tool" "$run")"
			echo "pair $pair: ${line//$'\t'/ }" >&2
			echo "$line" >>"$work/runs"
		done
		bin/sandbox down --state "$state" >/dev/null
		rm -rf "$state"
	done
done

# median COLUMN TOOL RUN: the median of one column (3 wall, 4 RSS,
# 5 requests) over the pairs.
median() {
	awk -F'\t' -v c="$1" -v t="$2" -v r="$3" '$1 == t && $2 == r { print $c }' "$work/runs" |
		sort -g | awk '{a[NR] = $1} END { if (NR % 2) print a[(NR + 1) / 2]; else printf "%g\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

# spread COLUMN TOOL RUN: min–max of one column over the pairs.
spread() {
	awk -F'\t' -v c="$1" -v t="$2" -v r="$3" '$1 == t && $2 == r { print $c }' "$work/runs" | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print lo "–" hi }'
}

echo "Step 1, Flux v2.9.5 + image extras (39 objects), $pairs alternating pairs on fresh sandboxes; medians:"
echo
echo "| run | $base wall (s) | bootstrap wall (s) | ratio | $base requests | bootstrap requests | ratio | peak RSS $base / bootstrap (MiB) |"
echo "|---|---|---|---|---|---|---|---|"
for run in fresh rerun; do
	kw=$(median 3 "$base" $run) bw=$(median 3 bootstrap $run)
	km=$(median 4 "$base" $run) bm=$(median 4 bootstrap $run)
	kr=$(median 5 "$base" $run) br=$(median 5 bootstrap $run)
	printf '| %s | %s | %s | %s× | %s | %s | %s× | %s / %s |\n' "$run" "$kw" "$bw" "$(ratio "$bw" "$kw")" "$kr" "$br" "$(ratio "$br" "$kr")" "$km" "$bm"
done
echo
echo "Spread of wall time over the pairs (min–max, s):"
echo
for run in fresh rerun; do
	echo "- $run: $base $(spread 3 "$base" $run), bootstrap $(spread 3 bootstrap $run)"
done
echo
echo "Where the requests go (by verb, the last pair):"
echo
for run in fresh rerun; do
	for tool in "$base" bootstrap; do
		awk -F'\t' -v t="$tool" -v r="$run" '$1 == t && $2 == r { line = $5 " (" $6 ")" } END { print "- " r ", " t ": " line }' "$work/runs"
	done
done
