#!/usr/bin/env bash
# Measures the first `make demo` a newcomer runs: a fresh `git clone` of this
# commit, every cache pointed at a new empty directory (HOME, GOCACHE,
# GOMODCACHE, GOPATH, BOOTSTRAP_SANDBOX_CACHE), then `make demo` under
# /usr/bin/time -v. Prints the phase times as a Markdown table with the date
# and the machine, and writes it, with each run's full output, to the output
# directory. The figure hack/demo.sh (FIRST_RUN_MIN), README.md and
# docs/sandbox.md quote comes from here. Asserts nothing.
#
#   hack/sandbox/measure-cold.sh                      HEAD only (≈ 25–35 min on 2 cores)
#   hack/sandbox/measure-cold.sh --baseline REF       HEAD, then REF (e.g. the commit before the
#                                                     module prefetch), side by side
#   hack/sandbox/measure-cold.sh --out DIR            where the report and logs go
#                                                     (default /tmp/bootstrap-measure-cold-<time>)
#   hack/sandbox/measure-cold.sh --keep               keep the clones and caches (GBs) afterwards
#   hack/sandbox/measure-cold.sh --report DIR         print the table again from DIR's logs (no run)
#
# Run it with the cores to itself: anything else running changes the figure
# (the load average at the start and end of each run is in the table). It
# needs the network to the Go module proxy and ≈ 12 GB of free disk per run.
# Only committed work is measured (a clone of HEAD, not the working tree).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"

baseline=""
outdir="/tmp/bootstrap-measure-cold-$(date -u +%Y%m%dT%H%M%SZ)"
keep=""
report_only=""
while (($#)); do
	case "$1" in
	--baseline) baseline="${2:?--baseline needs a git ref}"; shift ;;
	--out) outdir="${2:?--out needs a directory}"; shift ;;
	--keep) keep=1 ;;
	--report) outdir="${2:?--report needs the directory of an earlier run}"; report_only=1; shift ;;
	-h | --help) sed -n '2,/^set -e/s/^# \{0,1\}//p' "$0" | sed '$d'; exit 0 ;;
	*) echo "measure-cold: unknown argument $1; see --help" >&2; exit 2 ;;
	esac
	shift
done

if [[ -z "$report_only" ]]; then
	[[ -x /usr/bin/time ]] || { echo "measure-cold: /usr/bin/time missing; apt-get install time" >&2; exit 1; }
	head_sha="$(git -C "$root" rev-parse HEAD)"
	base_sha=""
	if [[ -n "$baseline" ]]; then
		base_sha="$(git -C "$root" rev-parse --verify "$baseline^{commit}")" || { echo "measure-cold: no commit $baseline" >&2; exit 2; }
	fi
	if [[ -n "$(git -C "$root" status --porcelain --untracked-files=no)" ]]; then
		echo "measure-cold: the working tree has uncommitted changes; they are not measured (a clone of HEAD is)" >&2
	fi
	mkdir -p "$outdir"
fi

# The proxy settings the user has, kept explicitly: the new HOME has no go env file.
proxy_env=()
for v in GOPROXY GOSUMDB GONOSUMDB GOPRIVATE GONOPROXY GOINSECURE; do
	val="$(go env "$v")"
	[[ -n "$val" ]] && proxy_env+=("$v=$val")
done

# fmt_s SECONDS prints 1m05s.
fmt_s() { if (($1 >= 60)); then printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); else printf '%ds' "$1"; fi; }

# run LABEL SHA: clone, empty caches, `make demo` with each output line
# stamped with its epoch second; leaves $outdir/LABEL.log (stamped output),
# LABEL.time (/usr/bin/time -v) and LABEL.facts (KEY=VALUE).
run() {
	local label="$1" sha="$2" ref="$3" w
	w="$outdir/$label"
	rm -rf "$w"
	mkdir -p "$w"/{home,gocache,gomodcache,gopath,sandbox}
	git clone -q --no-checkout "$root" "$w/src"
	git -C "$w/src" checkout -q --detach "$sha"
	echo "measure-cold: $label ($sha): make demo in $w/src, caches in $w (log $outdir/$label.log)" >&2
	local load0 t0 t1 rc=0
	load0="$(cut -d' ' -f1-3 /proc/loadavg)"
	t0=$(date +%s)
	(
		cd "$w/src"
		env -u BOOTSTRAP_SANDBOX_BIN -u BOOTSTRAP_DEMO_STATE -u BOOTSTRAP_SANDBOX_PREFETCH -u BOOTSTRAP_SANDBOX_PREFETCH_ID \
			-u GOFLAGS -u GOTOOLCHAIN -u GOENV \
			"${proxy_env[@]}" HOME="$w/home" GOCACHE="$w/gocache" GOMODCACHE="$w/gomodcache" GOPATH="$w/gopath" \
			BOOTSTRAP_SANDBOX_CACHE="$w/sandbox" \
			/usr/bin/time -v -o "$outdir/$label.time" make demo </dev/null 2>&1
	) | while IFS= read -r line; do printf '%(%s)T %s\n' -1 "$line"; done >"$outdir/$label.log" || rc=$?
	t1=$(date +%s)
	# A prefetch still downloading must finish before its cache is measured or removed.
	local lock
	for lock in "$w"/sandbox/*/.prefetch.lock; do [[ -f "$lock" ]] && flock "$lock" true; done
	{
		echo "rc=$rc"
		echo "sha=$sha"
		echo "ref=$ref"
		echo "t0=$t0"
		echo "t1=$t1"
		echo "load0=$load0"
		echo "load1=$(cut -d' ' -f1-3 /proc/loadavg)"
		echo "modcache=$(du -sh "$w/gomodcache" 2>/dev/null | cut -f1)"
		echo "gocache=$(du -sh "$w/gocache" 2>/dev/null | cut -f1)"
		echo "sandbox=$(du -sh "$w/sandbox" 2>/dev/null | cut -f1)"
	} >"$outdir/$label.facts"
	if [[ -z "$keep" ]]; then
		chmod -R u+w "$w" 2>/dev/null || true
		rm -rf "$w"
	fi
	echo "measure-cold: $label: make demo exit $rc after $(fmt_s $((t1 - t0)))" >&2
}

# cell LABEL PHASE prints one table cell for a run.
cell() {
	local label="$1" phase="$2" log="$outdir/$1.log" facts="$outdir/$1.facts" t0 t1 a b v
	t0="$(sed -n 's/^t0=//p' "$facts")"
	t1="$(sed -n 's/^t1=//p' "$facts")"
	# first_at REGEX: the epoch of the first output line matching REGEX.
	first_at() { grep -E -m1 "^[0-9]+ $1" "$log" | cut -d' ' -f1; }
	case "$phase" in
	build)
		a="$(first_at '== offline')"
		[[ -n "$a" ]] && fmt_s $((a - t0)) || echo "—"
		;;
	offline)
		a="$(first_at '== offline')"
		b="$(first_at '== sandbox binaries')"
		[[ -n "$a" && -n "$b" ]] && fmt_s $((b - a)) || echo "—"
		;;
	prefetch)
		v="$(sed -n 's/^[0-9]* module prefetch: every module downloaded, in \([^ ]*\) .*/\1/p' "$log" | head -1)"
		[[ -n "$v" ]] || v="$(sed -n 's/^[0-9]* module prefetch: \(failed after [^ ]*\) .*/\1/p' "$log" | head -1)"
		echo "${v:-—}"
		;;
	sandbox)
		v="$(sed -n 's/^[0-9]* sandbox build: \([0-9]* built\), [0-9]* cached, \([^;]*\);.*/\2 (\1)/p' "$log" | head -1)"
		echo "${v:-—}"
		;;
	bin:*)
		v="$(grep -E "^[0-9]+ .*\] ${phase#bin:} — " "$log" | sed -n 's/.* done in \([^ ]*\) (elapsed.*/\1/p' | head -1)"
		echo "${v:-not built}"
		;;
	demo)
		a="$(first_at '== sandbox: starting')"
		[[ -n "$a" ]] && fmt_s $((t1 - a)) || echo "—"
		;;
	total)
		v="$(fmt_s $((t1 - t0)))"
		[[ "$(sed -n 's/^rc=//p' "$facts")" == 0 ]] && echo "**$v**" || echo "**$v (make demo FAILED, exit $(sed -n 's/^rc=//p' "$facts"))**"
		;;
	rss)
		v="$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$outdir/$label.time" 2>/dev/null)"
		[[ -n "$v" ]] && echo "$((v / 1024)) MiB" || echo "—"
		;;
	caches) echo "$(sed -n 's/^modcache=//p' "$facts") / $(sed -n 's/^gocache=//p' "$facts") / $(sed -n 's/^sandbox=//p' "$facts")" ;;
	load) echo "$(sed -n 's/^load0=//p' "$facts") → $(sed -n 's/^load1=//p' "$facts")" ;;
	esac
}

if [[ -n "$report_only" ]]; then
	[[ -f "$outdir/head.facts" ]] || { echo "measure-cold: $outdir has no head.facts (not a measure-cold output directory)" >&2; exit 2; }
	labels=(head)
	[[ -f "$outdir/baseline.facts" ]] && labels+=(baseline)
else
	labels=(head)
	run head "$head_sha" HEAD
	if [[ -n "$base_sha" ]]; then
		labels+=(baseline)
		run baseline "$base_sha" "$baseline"
	fi
fi
fact() { sed -n "s/^$2=//p" "$outdir/$1.facts"; }

report="$outdir/report.md"
{
	echo "First \`make demo\` from a fresh clone, every cache empty ($(date -u -d "@$(fact head t0)" +%Y-%m-%d), $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB RAM, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(go version | cut -d' ' -f3)):"
	echo
	head_sha="$(fact head sha)"
	hdr="| phase | HEAD ${head_sha:0:10} |"
	sep="| --- | --- |"
	if [[ ${#labels[@]} == 2 ]]; then
		base_sha="$(fact baseline sha)"
		hdr+=" baseline $(fact baseline ref) (${base_sha:0:10}) |"
		sep+=" --- |"
	fi
	echo "$hdr"
	echo "$sep"
	for row in "build:make build (bundles, compile bin/bootstrap and bin/sandbox; up to the offline part)" "offline:offline render + check" \
		"prefetch:module prefetch (background, overlaps the above and below)" "sandbox:sandbox build (build.sh)" \
		bin:etcd bin:kube-apiserver bin:kube-controller-manager bin:kube-scheduler bin:kubectl bin:kwok \
		bin:source-controller bin:kustomize-controller bin:helm-controller \
		"demo:the demo itself (sandbox up → tear down)" "total:total (make demo, wall)" \
		"rss:peak RSS (largest process)" "caches:module cache / build cache / sandbox cache" \
		"load:load average, start → end"; do
		phase="${row%%:*}"
		name="${row#*:}"
		[[ "$phase" == bin ]] && { phase="$row"; name="sandbox: ${row#bin:}"; }
		line="| $name |"
		for l in "${labels[@]}"; do line+=" $(cell "$l" "$phase") |"; done
		echo "$line"
	done
} >"$report"
cat "$report"
echo
echo "measure-cold: report $report; full output $outdir/{$(
	IFS=,
	echo "${labels[*]}"
)}.log"
