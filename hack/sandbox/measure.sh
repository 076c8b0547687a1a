#!/usr/bin/env bash
# Measures the numbers the README reports: build time (cold when the cache
# is empty), cache size, sandbox start → API ready → node ready, and the e2e
# suite time. Prints a Markdown table; asserts nothing.
#
#   hack/sandbox/measure.sh            all of it
#   hack/sandbox/measure.sh --no-e2e   skip the suite
#
# The first `make demo` from a fresh clone with every cache empty (the figure
# the README quotes) is hack/sandbox/measure-cold.sh's.
set -euo pipefail
cd "$(dirname "$0")/../.."

bin="$(bash hack/sandbox/build.sh --print)"
key_dir="$(dirname "$bin")"
cold="warm"
[[ -x "$bin/kube-apiserver" ]] || cold="cold"

t0=$(date +%s)
bash hack/sandbox/build.sh >/tmp/bootstrap-measure-build.log 2>&1
build_s=$(($(date +%s) - t0))
size="$(du -sh "$key_dir" | cut -f1)"
gocache="$(du -sh "$(go env GOCACHE)" 2>/dev/null | cut -f1)"
modcache="$(du -sh "$(go env GOMODCACHE)" 2>/dev/null | cut -f1)"

go build -o bin/sandbox ./cmd/sandbox
state="$(mktemp -d)"
ready="$(bin/sandbox up --state "$state" --bin "$bin")"
bin/sandbox down --state "$state" >/dev/null
api="$(sed -n 's/.*API .* ready after \([^,]*\),.*/\1/p' <<<"$ready")"
node="$(sed -n 's/.*node ready after \(.*\)$/\1/p' <<<"$ready" | head -1)"

e2e="skipped"
if [[ "${1:-}" != "--no-e2e" ]]; then
	t0=$(date +%s)
	if make --no-print-directory e2e >/tmp/bootstrap-measure-e2e.log 2>&1; then e2e="$(($(date +%s) - t0))s (pass)"; else e2e="$(($(date +%s) - t0))s (FAIL, see /tmp/bootstrap-measure-e2e.log)"; fi
fi

cat <<EOT
| measure | value |
| --- | --- |
| sandbox build ($cold cache) | ${build_s}s |
| sandbox binaries ($key_dir) | $size |
| Go build cache / module cache | $gocache / $modcache |
| sandbox start → API ready | $api |
| sandbox start → node ready | $node |
| e2e suite (make e2e) | $e2e |
| machine | $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB |
EOT
