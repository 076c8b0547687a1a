#!/usr/bin/env bash
# Builds the sandbox binaries (a real control plane and real Flux controllers)
# from the Go module proxy, at the versions pinned in versions.env, into a
# cache directory outside the repository keyed by those versions.
#
#   hack/sandbox/build.sh                  build what is missing (all nine), print the bin dir last
#   hack/sandbox/build.sh --demo           only what `make demo` runs (all but kubectl, which only
#                                          the e2e suite and the benchmarks use)
#   hack/sandbox/build.sh NAME...          only those binaries (e.g. kubectl)
#   hack/sandbox/build.sh --print          print the bin dir only (no build)
#   hack/sandbox/build.sh --missing [--demo|NAME...]   print the binaries not built yet, one a line
#   hack/sandbox/build.sh --prefetch-start [--tool] [--demo|NAME...]
#                                          download, in the background, every Go module the missing
#                                          binaries need (--tool: and the tool's own), then return at
#                                          once; `make demo` runs it with --tool before `make build`
#   hack/sandbox/build.sh --prefetch [--tool] [--demo|NAME...]   the same download, in the foreground
#
# A build starts the prefetch itself when none is running, so the network
# (module downloads, several at a time) overlaps the compiles (CPU) instead of
# each `go build` downloading its own module graph first. The builds do not
# wait for it: the Go module cache locks each module while it is downloaded,
# so a build that needs a module the prefetch is fetching waits for that one
# module, and a build that finds the prefetch failed downloads what it needs
# itself. Interrupting a build leaves the prefetch to finish its downloads
# (background jobs of a script ignore Ctrl-C); it then exits.
#
# One progress line per binary (n of m, what it is, its log file, then how
# long it took and the time elapsed since the build started), one line when
# the prefetch has finished. Each build's output (go: downloading …, compiler
# messages) goes to <cache>/<versions>/logs/NAME.log, printed in full when
# that build fails; the prefetch's to logs/prefetch.log. How long a cold
# first `make demo` takes is in hack/demo.sh (FIRST_RUN_*), measured by
# hack/sandbox/measure-cold.sh.
#
# Environment: BOOTSTRAP_SANDBOX_CACHE (default $HOME/.cache/bootstrap-sandbox);
# BOOTSTRAP_SANDBOX_PREFETCH=off skips the prefetch.
set -euo pipefail
# The whole script is one block, read before it runs: a checkout or pull
# during a long build must not change the lines bash has yet to read.
# (SC2317: shellcheck takes the functions after an early exit for unreachable.)
# shellcheck disable=SC2317
{
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"

# shellcheck disable=SC1091
source "$root/versions.env"
: "${KUBERNETES_VERSION:?versions.env lacks KUBERNETES_VERSION}"
: "${ETCD_VERSION:?versions.env lacks ETCD_VERSION}"
: "${KWOK_VERSION:?versions.env lacks KWOK_VERSION}"
: "${SOURCE_CONTROLLER_VERSION:?versions.env lacks SOURCE_CONTROLLER_VERSION}"
: "${KUSTOMIZE_CONTROLLER_VERSION:?versions.env lacks KUSTOMIZE_CONTROLLER_VERSION}"
: "${HELM_CONTROLLER_VERSION:?versions.env lacks HELM_CONTROLLER_VERSION}"

cache="${BOOTSTRAP_SANDBOX_CACHE:-$HOME/.cache/bootstrap-sandbox}"
key="k8s-${KUBERNETES_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}_sc-${SOURCE_CONTROLLER_VERSION}_kc-${KUSTOMIZE_CONTROLLER_VERSION}_hc-${HELM_CONTROLLER_VERSION}"
out="$cache/$key"
bin="$out/bin"

if [[ "${1:-}" == "--print" ]]; then
	echo "$bin"
	exit 0
fi

# Every binary, in build order; --demo is all of them but kubectl.
all=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok source-controller kustomize-controller helm-controller)
mode=build
want=()
demo=""
tool=""
while (($#)); do
	case "$1" in
	--prefetch) mode=prefetch ;;
	--prefetch-start) mode=prefetch-start ;;
	--missing) mode=missing ;;
	--tool) tool=1 ;;
	--demo)
		demo=1
		for b in "${all[@]}"; do [[ $b == kubectl ]] || want+=("$b"); done
		;;
	--all) want+=("${all[@]}") ;;
	-h | --help) sed -n '2,/^$/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
	-*) echo "build.sh: unknown flag $1; see hack/sandbox/build.sh --help" >&2; exit 2 ;;
	*)
		[[ " ${all[*]} " == *" $1 "* ]] || { echo "build.sh: no sandbox binary named '$1'; the names are: ${all[*]}" >&2; exit 2; }
		want+=("$1")
		;;
	esac
	shift
done
((${#want[@]})) || want=("${all[@]}")
# wanted NAME: is NAME among the binaries asked for?
wanted() { [[ " ${want[*]} " == *" $1 "* ]]; }

command -v go >/dev/null || { echo "build.sh: go not found on PATH; install Go $(sed -n 's/^go //p' "$root/go.mod")" >&2; exit 1; }

# The tools module pins what it builds; it must agree with versions.env.
tools_mod="$here/tools/kubernetes/go.mod"
staging="v0.${KUBERNETES_VERSION#v1.}"
for w in "k8s.io/kubernetes $KUBERNETES_VERSION" "go.etcd.io/etcd/server/v3 $ETCD_VERSION" "k8s.io/api => k8s.io/api $staging"; do
	grep -qF "$w" "$tools_mod" || {
		echo "build.sh: $tools_mod does not pin '$w' (versions.env says so); update it: cd hack/sandbox/tools/kubernetes && go get k8s.io/kubernetes@$KUBERNETES_VERSION go.etcd.io/etcd/server/v3@$ETCD_VERSION, set every k8s.io replace to $staging, go mod tidy" >&2
		exit 1
	}
done

logs="$out/logs"
mkdir -p "$bin" "$logs"
export GOFLAGS="-buildvcs=false"
# Never let a module's go line fetch another toolchain: it must build with ours.
export GOTOOLCHAIN=local

# missing prints the wanted binaries not yet in $bin, one per line.
missing() {
	local b
	for b in "${want[@]}"; do [[ -x "$bin/$b" ]] || echo "$b"; done
}

# dur SECONDS prints a duration as 1m05s (or 42s).
dur() {
	if (($1 >= 60)); then printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); else printf '%ds' "$1"; fi
}

# since SECONDS-EPOCH prints the time since then as 1m05s.
since() { dur $(($(date +%s) - $1)); }

k8s_ldflags() {
	local v="$KUBERNETES_VERSION" major minor
	major="$(echo "${v#v}" | cut -d. -f1)"
	minor="$(echo "${v#v}" | cut -d. -f2)"
	local f=""
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		f+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
	done
	echo "-s -w$f"
}

# k8s_pkg NAME prints the package of the tools module that NAME is built from.
k8s_pkg() {
	case "$1" in
	etcd) echo ./cmd/etcd ;;
	*) echo "k8s.io/kubernetes/cmd/$1" ;;
	esac
}

# module_dir MODULE@VERSION prints the module's extracted directory in GOMODCACHE.
module_dir() {
	local dir
	dir="$(go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')"
	[[ -n "$dir" && -d "$dir" ]] || { echo "build.sh: could not download $1 from the Go module proxy" >&2; return 1; }
	echo "$dir"
}

# flux_replaces NAME prints the extra replace lines controller NAME is built with.
flux_replaces() {
	case "$1" in
	source-controller) echo "github.com/fluxcd/pkg/artifact => github.com/fluxcd/pkg/artifact v0.18.0" ;;
	esac
}

# flux_version NAME prints the pinned version of controller NAME.
flux_version() {
	case "$1" in
	source-controller) echo "$SOURCE_CONTROLLER_VERSION" ;;
	kustomize-controller) echo "$KUSTOMIZE_CONTROLLER_VERSION" ;;
	helm-controller) echo "$HELM_CONTROLLER_VERSION" ;;
	esac
}

# flux_workdir NAME prints a new directory holding controller NAME's own
# module, copied out of the read-only module cache, with its local api replace
# dropped (the module zip has no ./api directory's go.mod sibling to resolve
# it) and its extra replace lines added. The build and the prefetch both use it,
# so the prefetch downloads exactly the graph the build resolves.
flux_workdir() {
	local name="$1" src work r
	src="$(module_dir "github.com/fluxcd/$name@$(flux_version "$name")")" || return 1
	work="$(mktemp -d)"
	cp -r "$src/." "$work/"
	chmod -R u+w "$work"
	sed -i "\#^replace github.com/fluxcd/$name/api => ./api#d" "$work/go.mod"
	while read -r r; do
		[[ -n "$r" ]] && echo "replace $r" >>"$work/go.mod"
	done < <(flux_replaces "$name")
	echo "$work"
}

# kwok_workdir prints a new directory holding kwok's module (what
# `go install sigs.k8s.io/kwok/cmd/kwok@VERSION` builds as its main module).
kwok_workdir() {
	local src work
	src="$(module_dir "sigs.k8s.io/kwok@$KWOK_VERSION")" || return 1
	work="$(mktemp -d)"
	cp -r "$src/." "$work/"
	chmod -R u+w "$work"
	echo "$work"
}

# ---- prefetch -------------------------------------------------------------

pf_state="$out/.prefetch.state" # STATUS ID START-EPOCH [END-EPOCH]; STATUS running|done|failed
pf_lock="$out/.prefetch.lock"
pf_log="$logs/prefetch.log"

# prefetch_group NAME CMD...: one group's downloads, its output prefixed with
# NAME in the prefetch log; GOMAXPROCS=8 lets each go command fetch 8 modules
# at a time (it fetches GOMAXPROCS at a time, 2 on a 2-core machine), which
# is what a network-bound step wants.
prefetch_group() {
	local name="$1" t0 rc=0
	shift
	t0=$(date +%s)
	GOMAXPROCS=8 "$@" 2>&1 | sed -u "s/^/$name: /" || rc=$?
	if ((rc == 0)); then echo "$name: done in $(since "$t0")"; else echo "$name: FAILED after $(since "$t0") (exit $rc)"; fi
	return "$rc"
}

pf_k8s() {
	local pkgs=() b
	for b in "$@"; do pkgs+=("$(k8s_pkg "$b")"); done
	(cd "$here/tools/kubernetes" && go list -deps "${pkgs[@]}" >/dev/null)
}
pf_flux() {
	local work rc=0
	work="$(flux_workdir "$1")" || return 1
	(cd "$work" && GOFLAGS="$GOFLAGS -mod=mod" go list -deps . >/dev/null) || rc=$?
	rm -rf "$work"
	return "$rc"
}
pf_kwok() {
	local work rc=0
	work="$(kwok_workdir)" || return 1
	(cd "$work" && GOFLAGS="$GOFLAGS -mod=mod" go list -deps ./cmd/kwok >/dev/null) || rc=$?
	rm -rf "$work"
	return "$rc"
}
# The tool's own graph (what `make build` and `make demo` compile); -e: the
# embedded bundles may not be extracted yet, which only go:embed minds.
pf_tool() {
	(cd "$root" && go list -e -deps ./cmd/bootstrap ./cmd/sandbox ./hack/demo/homelab ./internal/genbundles >/dev/null)
}

# prefetch downloads, all groups at once, the modules of the missing wanted
# binaries; one prefetch per cache key at a time (a second one returns).
prefetch() {
	exec 8>"$pf_lock"
	flock -n 8 || { echo "prefetch: another prefetch of $key is running"; return 0; }
	local id="${BOOTSTRAP_SANDBOX_PREFETCH_ID:-prefetch-$$}" t0 k8s=() pids=() b rc=0 p
	t0=$(date +%s)
	echo "running $id $t0" >"$pf_state.tmp" && mv "$pf_state.tmp" "$pf_state"
	local also=""
	[[ -z "$tool" ]] || also="(and the tool's own) "
	echo "prefetch: modules for: $(missing | tr '\n' ' ')${also}into GOMODCACHE $(go env GOMODCACHE)"
	if [[ -n "$tool" ]]; then prefetch_group tool pf_tool & pids+=($!); fi
	while read -r b; do
		case "$b" in
		etcd | kube-* | kubectl) k8s+=("$b") ;;
		kwok) prefetch_group kwok pf_kwok & pids+=($!) ;;
		*) prefetch_group "$b" pf_flux "$b" & pids+=($!) ;;
		esac
	done < <(missing)
	if ((${#k8s[@]})); then prefetch_group kubernetes pf_k8s "${k8s[@]}" & pids+=($!); fi
	for p in "${pids[@]}"; do wait "$p" || rc=1; done
	local status="done"
	((rc == 0)) || status=failed
	echo "$status $id $t0 $(date +%s)" >"$pf_state.tmp" && mv "$pf_state.tmp" "$pf_state"
	echo "prefetch: $status in $(since "$t0")"
	return "$rc"
}

# prefetch_start starts the prefetch in the background unless nothing is
# missing, BOOTSTRAP_SANDBOX_PREFETCH=off, one is running, or one of this
# session (BOOTSTRAP_SANDBOX_PREFETCH_ID, set by `make demo`) already ran.
# It sets pf_id to the prefetch this run reports on ("" for none).
pf_id=""
prefetch_start() {
	[[ "${BOOTSTRAP_SANDBOX_PREFETCH:-}" != off ]] || return 0
	[[ -n "$(missing)" ]] || return 0
	local id="${BOOTSTRAP_SANDBOX_PREFETCH_ID:-build-$$}" st=() sid=""
	[[ -f "$pf_state" ]] && read -r -a st <"$pf_state" && sid="${st[1]:-}"
	if ! flock -n "$pf_lock" true 2>/dev/null; then
		pf_id="$sid" # running: report on it whoever started it
		return 0
	fi
	if [[ "$sid" == "$id" ]]; then
		pf_id="$id" # this session's prefetch has already finished
		return 0
	fi
	echo "running $id $(date +%s)" >"$pf_state.tmp" && mv "$pf_state.tmp" "$pf_state"
	# 9>&-: the child must not inherit (and so hold) the build lock.
	BOOTSTRAP_SANDBOX_PREFETCH_ID="$id" bash "$here/build.sh" --prefetch ${tool:+--tool} "${want[@]}" >"$pf_log" 2>&1 </dev/null 9>&- &
	pf_id="$id"
	local m what also=""
	m="$(missing | wc -l)"
	what="the $m sandbox binaries to build"
	((m > 1)) || what="the sandbox binary to build"
	[[ -z "$tool" ]] || also=" and the tool's"
	echo "module prefetch: downloading the Go modules of ${what}${also} in the background, several at a time (log $pf_log)"
}

# prefetch_note prints one line once the prefetch this run reports on has finished.
pf_said=""
prefetch_note() {
	[[ -n "$pf_id" && -z "$pf_said" && -f "$pf_state" ]] || return 0
	local st=()
	read -r -a st <"$pf_state" || return 0
	[[ "${st[1]:-}" == "$pf_id" ]] || return 0
	case "${st[0]}" in
	done) echo "module prefetch: every module downloaded, in $(dur $((st[3] - st[2]))) (log $pf_log)" ;;
	failed) echo "module prefetch: failed after $(dur $((st[3] - st[2]))) (log $pf_log); the builds download what they need themselves" ;;
	*) return 0 ;;
	esac
	pf_said=1
}

case "$mode" in
missing)
	missing
	exit 0
	;;
prefetch)
	prefetch
	exit $?
	;;
prefetch-start)
	prefetch_start
	exit 0
	;;
esac

# ---- build ----------------------------------------------------------------

# One build per cache key at a time: a second build (another checkout, CI
# and a person) waits for the first and then finds its binaries built.
exec 9>"$out/.build.lock"
if ! flock -n 9; then
	echo "build.sh: another build of $key is running; waiting for it" >&2
	flock 9
fi

total=${#want[@]}
n=0
built=0
start_all=$(date +%s)
prefetch_start

# step NAME WHAT CMD... runs CMD unless NAME was not asked for or $bin/NAME
# exists; CMD must write $bin/NAME. Its output goes to $logs/NAME.log; the
# terminal gets one line.
step() {
	local name="$1" what="$2"
	shift 2
	wanted "$name" || return 0
	prefetch_note
	n=$((n + 1))
	if [[ -x "$bin/$name" ]]; then
		echo "[$n/$total] $name: present, skipping"
		return 0
	fi
	local log="$logs/$name.log" t0
	t0=$(date +%s)
	printf '[%d/%d] %s — %s: building (log %s) … ' "$n" "$total" "$name" "$what" "$log"
	if ! "$@" >"$log" 2>&1; then
		echo "FAILED after $(since "$t0")"
		{
			echo "---- $log ----"
			cat "$log"
			echo "---- end of $log ----"
			echo "[$n/$total] $name: BUILD FAILED (its output is above and in $log); rerun hack/sandbox/build.sh after fixing"
		} >&2
		rm -f "$bin/$name$tmp"
		exit 1
	fi
	built=$((built + 1))
	echo "done in $(since "$t0") (elapsed $(since "$start_all"))"
}

# Build into NAME.tmp.<pid> and rename, so an interrupted build never leaves
# a binary that the skip check would trust, and two builds sharing the cache
# (two worktrees) never rename or delete each other's output.
tmp=".tmp.$$"
build_k8s() {
	local name="$1"
	(cd "$here/tools/kubernetes" && go build -ldflags "$(k8s_ldflags)" -o "$bin/$name$tmp" "$(k8s_pkg "$name")") && mv "$bin/$name$tmp" "$bin/$name"
}

build_etcd() {
	(cd "$here/tools/kubernetes" && go build -ldflags "-s -w" -o "$bin/etcd$tmp" ./cmd/etcd) && mv "$bin/etcd$tmp" "$bin/etcd"
}

build_kwok() {
	local gobin
	gobin="$(mktemp -d)"
	GOBIN="$gobin" go install -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" || return 1
	mv "$gobin/kwok" "$bin/kwok" && rmdir "$gobin"
}

# build_flux NAME: the controller's own module (flux_workdir), built as is.
build_flux() {
	local name="$1" work
	work="$(flux_workdir "$name")" || return 1
	(cd "$work" && GOFLAGS="$GOFLAGS -mod=mod" go build -ldflags "-s -w" -o "$bin/$name$tmp" .) || { rm -rf "$work"; return 1; }
	rm -rf "$work"
	mv "$bin/$name$tmp" "$bin/$name"
}

echo "sandbox build: cache $out"
# kwok's stages (node initialize + heartbeat, pod ready/complete/delete) ship
# as YAML in its module; the sandbox passes them to kwok with --config.
stages="$out/kwok-stages.yaml"
if [[ ! -s "$stages" ]]; then
	kdir="$(module_dir "sigs.k8s.io/kwok@$KWOK_VERSION" 2>"$logs/kwok-stages.log")" || { cat "$logs/kwok-stages.log" >&2; exit 1; }
	{
		for f in "$kdir"/kustomize/stage/node/fast/node-initialize.yaml \
			"$kdir"/kustomize/stage/node/heartbeat/node-heartbeat.yaml \
			"$kdir"/kustomize/stage/pod/fast/pod-ready.yaml \
			"$kdir"/kustomize/stage/pod/fast/pod-complete.yaml \
			"$kdir"/kustomize/stage/pod/fast/pod-delete.yaml; do
			[[ -f "$f" ]] || { echo "build.sh: kwok stage $f missing from sigs.k8s.io/kwok@$KWOK_VERSION" >&2; exit 1; }
			echo "---"
			cat "$f"
		done
	} >"$stages$tmp"
	mv "$stages$tmp" "$stages"
	echo "kwok stages: $stages"
fi

step etcd "etcd $ETCD_VERSION, the API server's store" build_etcd
step kube-apiserver "Kubernetes $KUBERNETES_VERSION API server" build_k8s kube-apiserver
step kube-controller-manager "Kubernetes $KUBERNETES_VERSION controller manager" build_k8s kube-controller-manager
step kube-scheduler "Kubernetes $KUBERNETES_VERSION scheduler" build_k8s kube-scheduler
step kubectl "kubectl $KUBERNETES_VERSION, for the stock-path comparisons" build_k8s kubectl
step kwok "kwok $KWOK_VERSION, the fake node that marks pods Ready" build_kwok
step source-controller "Flux source-controller $SOURCE_CONTROLLER_VERSION" build_flux source-controller
step kustomize-controller "Flux kustomize-controller $KUSTOMIZE_CONTROLLER_VERSION" build_flux kustomize-controller
step helm-controller "Flux helm-controller $HELM_CONTROLLER_VERSION" build_flux helm-controller
prefetch_note

echo "sandbox build: $built built, $((total - built)) cached, $(since "$start_all"); size $(du -sh "$out" | cut -f1)"
if [[ -n "$demo" && ! -x "$bin/kubectl" ]]; then
	echo "sandbox build: kubectl not built (only the e2e suite and the benchmarks use it; make e2e builds it, or hack/sandbox/build.sh kubectl)"
fi
echo "$bin"
exit 0
}
