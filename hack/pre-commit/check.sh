#!/usr/bin/env bash
# The pre-commit hook's entry (.pre-commit-hooks.yaml): builds bootstrap
# once in pre-commit's clone of this repository with `make build` (which
# embeds the Flux release bundles: a plain `go install`, as pre-commit's
# `language: golang` does, builds a binary without them, whose check stops at
# "built without the embedded Flux bundles"), then checks the repository
# being committed. pre-commit runs it from the repository being committed,
# with the hook's args (none: every cluster root the repository declares,
# each checked; --env dev or --path DIR: that one); it passes no file names
# (pass_filenames: false): the check is of whole environments.
#
# BOOTSTRAP_PRECOMMIT_BIN: use this binary instead of building one.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
if [[ -n ${BOOTSTRAP_PRECOMMIT_BIN:-} && ! -x $BOOTSTRAP_PRECOMMIT_BIN ]]; then
	echo "bootstrap hook: BOOTSTRAP_PRECOMMIT_BIN=$BOOTSTRAP_PRECOMMIT_BIN is not an executable file; unset it to build one" >&2
	exit 2
fi
bin=${BOOTSTRAP_PRECOMMIT_BIN:-$here/bin/bootstrap}
if [[ ! -x $bin ]]; then
	command -v make >/dev/null || { echo "bootstrap hook: make is needed to build bootstrap once (or set BOOTSTRAP_PRECOMMIT_BIN to an installed bootstrap)" >&2; exit 2; }
	command -v go >/dev/null || { echo "bootstrap hook: Go is needed to build bootstrap once (or set BOOTSTRAP_PRECOMMIT_BIN to an installed bootstrap)" >&2; exit 2; }
	echo "bootstrap hook: building bootstrap once in $here (make build)" >&2
	make -s -C "$here" build >&2 || { echo "bootstrap hook: the build failed (above); fix it or set BOOTSTRAP_PRECOMMIT_BIN" >&2; exit 2; }
fi
exec "$bin" check --repo . -q "$@"
