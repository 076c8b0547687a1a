#!/usr/bin/env bash
# Release archives, reproducibly: one bootstrap binary per platform, each in a
# tar.gz whose bytes depend only on the commit and the toolchain, plus
# SHA256SUMS and the build's provenance (`go version -m`). `make dist` runs it;
# the Flux release bundles it embeds are committed (pkg/components/bundles/flux),
# so no generate step comes first.
#
#   hack/dist.sh [OUT_DIR]          default dist/
#   PLATFORMS="linux/amd64 ..."     default linux and darwin on amd64 and arm64
#   VERSION=v1.2.3                  default `git describe --tags --always --dirty`
#
# What makes two builds of one commit byte-identical: -trimpath (no local
# paths), CGO_ENABLED=0 (no host C toolchain), -buildvcs (the commit, its
# time and modified flag, not the build's), the version from git or VERSION,
# and archives written with sorted names, mtime 0, owner 0 and gzip -n (no
# name, no timestamp in the gzip header). hack/dist-check.sh proves it.
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-dist}
platforms=${PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}
version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo devel)}
commit=$(git rev-parse HEAD 2>/dev/null || true)
pkg=github.com/homelab-ops/bootstrap/internal/buildinfo

if ! ls pkg/components/bundles/flux/v*/ >/dev/null 2>&1; then
	echo "dist: no Flux bundles in pkg/components/bundles/flux, where they are committed: restore them (git checkout -- pkg/components/bundles/flux, or make generate)" >&2
	exit 1
fi
for tool in tar gzip sha256sum; do
	command -v "$tool" >/dev/null || { echo "dist: $tool is needed" >&2; exit 1; }
done
tar --version | grep -q 'GNU tar' || { echo "dist: GNU tar is needed (--sort=name)" >&2; exit 1; }

# Only a directory this script wrote (or none) is replaced: `hack/dist.sh internal` must not delete the sources.
if [[ -e $out && ! -f $out/SHA256SUMS ]] && [[ -n $(ls -A "$out" 2>/dev/null) || ! -d $out ]]; then
	echo "dist: $out exists and is not a dist directory (no SHA256SUMS): pick another output directory" >&2
	exit 1
fi
rm -rf "$out"
mkdir -p "$out"
export CGO_ENABLED=0
# A binary's bytes must not depend on the caller's environment: GOFLAGS
# (e.g. -buildvcs=false), the code-generation levels and experiments (recorded
# in the build info too), or a toolchain switch.
unset GOFLAGS GOAMD64 GOARM64 GOARM GOEXPERIMENT GOFIPS140
export GOTOOLCHAIN=local
for p in $platforms; do
	goos=${p%/*} goarch=${p#*/}
	name=bootstrap_${version}_${goos}_${goarch}
	stage=$out/.stage/$name
	mkdir -p "$stage"
	echo "dist: $name" >&2
	GOOS=$goos GOARCH=$goarch go build -trimpath -buildvcs=true \
		-ldflags "-s -w -X $pkg.version=$version -X $pkg.commit=$commit" \
		-o "$stage/bootstrap" ./cmd/bootstrap
	cp README.md "$stage/"
	go version -m "$stage/bootstrap" | sed "s|$stage/||" >"$out/$name.provenance.txt"
	# Fixed order, times, owners and modes (0755 binary, 0644 the rest, whatever the umask).
	tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --mode=u+rwX,go+rX,go-w \
		--format=gnu -C "$out/.stage" -cf - "$name" | gzip -n -9 >"$out/$name.tar.gz"
done
rm -rf "$out/.stage"
(cd "$out" && sha256sum -- *.tar.gz *.provenance.txt >SHA256SUMS)
echo "dist: $(ls "$out" | wc -l) files in $out (version $version)" >&2
