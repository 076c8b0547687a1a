#!/usr/bin/env bash
# Builds the sandbox binaries (a real control plane and real Flux controllers)
# from the Go module proxy, at the versions pinned in versions.env, into a
# cache directory outside the repository keyed by those versions.
#
#   hack/sandbox/build.sh            build what is missing, print the bin dir last
#   hack/sandbox/build.sh --print    print the bin dir only (no build)
#
# One progress line per binary (n of m, what it is, its log file, then how
# long it took and the time elapsed since the build started). Each build's
# output (go: downloading …, compiler messages) goes to <cache>/<versions>/logs/
# NAME.log, printed in full when that build fails. A cold build of all nine
# takes ≈ 15 min on 2 idle cores (≈ 35 min when they are shared).
#
# Environment: BOOTSTRAP_SANDBOX_CACHE (default $HOME/.cache/bootstrap-sandbox).
set -euo pipefail

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

command -v go >/dev/null || { echo "build.sh: go not found on PATH; install Go $(sed -n 's/^go //p' "$root/go.mod")" >&2; exit 1; }

# The tools module pins what it builds; it must agree with versions.env.
tools_mod="$here/tools/kubernetes/go.mod"
staging="v0.${KUBERNETES_VERSION#v1.}"
for want in "k8s.io/kubernetes $KUBERNETES_VERSION" "go.etcd.io/etcd/server/v3 $ETCD_VERSION" "k8s.io/api => k8s.io/api $staging"; do
	grep -qF "$want" "$tools_mod" || {
		echo "build.sh: $tools_mod does not pin '$want' (versions.env says so); update it: cd hack/sandbox/tools/kubernetes && go get k8s.io/kubernetes@$KUBERNETES_VERSION go.etcd.io/etcd/server/v3@$ETCD_VERSION, set every k8s.io replace to $staging, go mod tidy" >&2
		exit 1
	}
done

mkdir -p "$bin"
# One build per cache key at a time: a second build (another checkout, CI
# and a person) waits for the first and then finds its binaries built.
exec 9>"$out/.build.lock"
if ! flock -n 9; then
	echo "build.sh: another build of $key is running; waiting for it" >&2
	flock 9
fi
export GOFLAGS="-buildvcs=false"
# Never let a module's go line fetch another toolchain: it must build with ours.
export GOTOOLCHAIN=local

total=9
n=0
built=0
start_all=$(date +%s)
logs="$out/logs"
mkdir -p "$logs"

# since SECONDS-EPOCH prints the time since then as 1m05s.
since() {
	local s=$(($(date +%s) - $1))
	if ((s >= 60)); then printf '%dm%02ds' $((s / 60)) $((s % 60)); else printf '%ds' "$s"; fi
}

# step NAME WHAT CMD... runs CMD unless $bin/NAME exists; CMD must write
# $bin/NAME. Its output goes to $logs/NAME.log; the terminal gets one line.
step() {
	local name="$1" what="$2"
	shift 2
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

# Build into NAME.tmp.<pid> and rename, so an interrupted build never leaves
# a binary that the skip check would trust, and two builds sharing the cache
# (two worktrees) never rename or delete each other's output.
tmp=".tmp.$$"
build_k8s() {
	local name="$1" pkg="$2"
	(cd "$here/tools/kubernetes" && go build -ldflags "$(k8s_ldflags)" -o "$bin/$name$tmp" "$pkg") && mv "$bin/$name$tmp" "$bin/$name"
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

# module_dir MODULE@VERSION prints the module's extracted directory in GOMODCACHE.
module_dir() {
	local dir
	dir="$(go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')"
	[[ -n "$dir" && -d "$dir" ]] || { echo "build.sh: could not download $1 from the Go module proxy" >&2; return 1; }
	echo "$dir"
}

# build_flux NAME VERSION [extra replace lines...]: the controller's own module,
# copied out of the read-only module cache, with its local api replace dropped
# (the module zip has no ./api directory's go.mod sibling to resolve it).
build_flux() {
	local name="$1" version="$2"
	shift 2
	local src work
	src="$(module_dir "github.com/fluxcd/$name@$version")" || return 1
	work="$(mktemp -d)"
	cp -r "$src/." "$work/"
	chmod -R u+w "$work"
	sed -i "\#^replace github.com/fluxcd/$name/api => ./api#d" "$work/go.mod"
	local r
	for r in "$@"; do echo "replace $r" >>"$work/go.mod"; done
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
step kube-apiserver "Kubernetes $KUBERNETES_VERSION API server" build_k8s kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
step kube-controller-manager "Kubernetes $KUBERNETES_VERSION controller manager" build_k8s kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
step kube-scheduler "Kubernetes $KUBERNETES_VERSION scheduler" build_k8s kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler
step kubectl "kubectl $KUBERNETES_VERSION, for the stock-path comparisons" build_k8s kubectl k8s.io/kubernetes/cmd/kubectl
step kwok "kwok $KWOK_VERSION, the fake node that marks pods Ready" build_kwok
step source-controller "Flux source-controller $SOURCE_CONTROLLER_VERSION" build_flux source-controller "$SOURCE_CONTROLLER_VERSION" \
	"github.com/fluxcd/pkg/artifact => github.com/fluxcd/pkg/artifact v0.18.0"
step kustomize-controller "Flux kustomize-controller $KUSTOMIZE_CONTROLLER_VERSION" build_flux kustomize-controller "$KUSTOMIZE_CONTROLLER_VERSION"
step helm-controller "Flux helm-controller $HELM_CONTROLLER_VERSION" build_flux helm-controller "$HELM_CONTROLLER_VERSION"

echo "sandbox build: $built built, $((total - built)) cached, $(since "$start_all"); size $(du -sh "$out" | cut -f1)"
echo "$bin"
