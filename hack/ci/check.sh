#!/usr/bin/env bash
# The one script the CI action (action.yml) runs: install a pinned release of
# bootstrap with its checksum verified (unless a binary is given), run
# `bootstrap check` on the repository, and leave a SARIF file for code
# scanning and a JUnit file for test reporting. CI of this repository runs
# it against fixtures (cmd/bootstrap/ci_test.go), with an installed binary.
#
# Inputs, as environment variables (not BOOTSTRAP_*: those are the tool's
# own flags):
#   CHECK_BIN        an installed bootstrap to use; no download when set
#   CHECK_VERSION    the release to install (e.g. v0.4.0) when CHECK_BIN is unset
#   CHECK_SHA256     that release archive's sha256 (from its SHA256SUMS): required to install
#   CHECK_URL        the archive's URL (default: the GitHub release asset of CHECK_VERSION
#                    for this runner's OS and architecture)
#   CHECK_REPO       the GitOps repository (default .)
#   CHECK_ENV        the environment (clusters/NAME), or
#   CHECK_PATH       the environment's directory inside CHECK_REPO; neither: every
#                    cluster root the repository declares, each checked, one report
#   CHECK_ARGS       more check flags, split on spaces and newlines (e.g. "--flux-version v2.8.3 --no-compare");
#                    quotes are not honoured, so a value cannot contain a space
#   CHECK_SARIF      the SARIF file to write (default bootstrap.sarif)
#   CHECK_JUNIT      the JUnit file to write (default bootstrap-junit.xml)
#   CHECK_INSTALL_DIR where to install (default $RUNNER_TEMP or a temporary directory)
#   CHECK_MODE       check (default) or diff: `bootstrap diff -o markdown` instead of check,
#                    for a pull-request comment (docs/diff.md "In a pull request")
#   CHECK_BASE       diff: the revision compared from (default: the merge-base with the
#                    default branch); in a pull request, its base commit
#   CHECK_HEAD       diff: the revision compared to (default: the work tree)
#   CHECK_MARKDOWN   diff: the Markdown file to write (default bootstrap-diff.md)
#
# Exit code: check's (0 pass, 1 a gate failed, 2 input error, 3 a required
# check could not run), or 2 when installing fails. The SARIF and JUnit files
# are written whatever the verdict; the script says so when they are missing.
# Diff mode: diff's (0 changes or none, 1 a Kustomization fails at head, 2
# input error); the Markdown is written whatever the verdict, and the step
# outputs say markdown=FILE, changed=, failed=, windows= (from the
# Markdown's first line) and comment= (the Markdown itself).
set -euo pipefail

repo_url=https://github.com/homelab-ops/bootstrap

die() {
	echo "bootstrap-ci: $*" >&2
	exit 2
}

# redact URL prints URL with its userinfo and query hidden: a private
# mirror's credentials or a presigned URL's token never reach the log.
redact() {
	sed -E 's#(://)[^/@]*@#\1***@#; s#\?.*#?***#' <<<"$1"
}

# sha256 FILE SUM: the pinned sum against the file, with GNU coreutils or macOS's shasum.
sha256() {
	if command -v sha256sum >/dev/null; then
		echo "$2  $1" | sha256sum -c --strict -
	elif command -v shasum >/dev/null; then
		echo "$2  $1" | shasum -a 256 -c -
	else
		die "neither sha256sum nor shasum is installed: cannot verify the archive"
	fi
}

install() {
	local version=${CHECK_VERSION:-} sum=${CHECK_SHA256:-}
	[[ -n $version ]] || die "set CHECK_BIN to an installed bootstrap, or CHECK_VERSION and CHECK_SHA256 to install a release"
	[[ $sum =~ ^[0-9a-f]{64}$ ]] || die "CHECK_SHA256 must be the 64 hex digits of the $version archive's sha256 (its line in the release's SHA256SUMS); got '${sum}'"
	local os arch
	os=$(uname -s | tr '[:upper:]' '[:lower:]')
	case $(uname -m) in
	x86_64 | amd64) arch=amd64 ;;
	aarch64 | arm64) arch=arm64 ;;
	*) die "no release for architecture $(uname -m): build from source (make build) and set CHECK_BIN" ;;
	esac
	local name=bootstrap_${version}_${os}_${arch}
	local url=${CHECK_URL:-$repo_url/releases/download/$version/$name.tar.gz}
	local dir=${CHECK_INSTALL_DIR:-${RUNNER_TEMP:-$(mktemp -d)}}/bootstrap-$version
	mkdir -p "$dir"
	local safe
	safe=$(redact "$url")
	echo "bootstrap-ci: installing $name from $safe" >&2
	curl -fsSL --retry 3 -o "$dir/$name.tar.gz" "$url" || die "download of $safe failed"
	# The pinned sum, not one fetched from the same place as the archive.
	(cd "$dir" && sha256 "$name.tar.gz" "$sum") >&2 ||
		die "$name.tar.gz does not have the pinned sha256 $sum: refusing it"
	tar -xzf "$dir/$name.tar.gz" -C "$dir" || die "cannot unpack $name.tar.gz"
	CHECK_BIN=$dir/$name/bootstrap
}

# Every input checked before anything is installed.
case ${CHECK_MODE:-check} in
check | diff) ;;
*) die "CHECK_MODE=${CHECK_MODE}: want check or diff" ;;
esac

if [[ -z ${CHECK_BIN:-} ]]; then
	install
fi
# A bare name (bin: bootstrap) is looked up on PATH.
if [[ $CHECK_BIN != */* ]]; then
	CHECK_BIN=$(command -v "$CHECK_BIN") || die "CHECK_BIN=${CHECK_BIN}: no such command on PATH"
fi
[[ -x $CHECK_BIN ]] || die "CHECK_BIN=$CHECK_BIN is not an executable file"

# extra_args appends CHECK_ARGS to args.
extra_args() {
	if [[ -n ${CHECK_ARGS:-} ]]; then
		# -d '': every line (an action input written as a YAML block), not the first only.
		read -r -d '' -a extra <<<"$CHECK_ARGS" || true
		args+=("${extra[@]}")
	fi
}

# env_args appends the environment (CHECK_ENV or CHECK_PATH) to args.
env_args() {
	if [[ -n ${CHECK_ENV:-} ]]; then
		args+=(--env "$CHECK_ENV")
	fi
	if [[ -n ${CHECK_PATH:-} ]]; then
		args+=(--path "$CHECK_PATH")
	fi
}

# diff_mode runs bootstrap diff -o markdown into CHECK_MARKDOWN and exits
# with its code.
diff_mode() {
	local md=${CHECK_MARKDOWN:-bootstrap-diff.md}
	args=(diff --repo "${CHECK_REPO:-.}" -o markdown)
	if [[ -n ${CHECK_BASE:-} ]]; then
		args+=(--base "$CHECK_BASE")
	fi
	if [[ -n ${CHECK_HEAD:-} ]]; then
		args+=(--head "$CHECK_HEAD")
	fi
	env_args
	extra_args
	"$CHECK_BIN" version >&2 || true
	set +e
	"$CHECK_BIN" "${args[@]}" >"$md"
	local code=$?
	set -e
	local marker changed=false failed=false windows=0 written=$md
	marker=$(head -n 1 "$md" 2>/dev/null || true)
	if [[ $marker =~ ^'<!-- bootstrap-diff changed='(true|false)' failed='(true|false)' windows='([0-9]+) ]]; then
		changed=${BASH_REMATCH[1]} failed=${BASH_REMATCH[2]} windows=${BASH_REMATCH[3]}
	else
		# No comment to post: markdown= and comment= are empty.
		echo "bootstrap-ci: $md was not written (exit $code: see the report above)" >&2
		written=
	fi
	if [[ -n ${GITHUB_OUTPUT:-} ]]; then
		# A delimiter no line of the Markdown is (random, checked).
		local eof
		eof=BOOTSTRAP_DIFF_$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
		if grep -qxF "$eof" "$md"; then
			die "the Markdown holds the output delimiter $eof: run again"
		fi
		{
			echo "exit-code=$code"
			echo "markdown=$written"
			echo "changed=$changed"
			echo "failed=$failed"
			echo "windows=$windows"
			echo "comment<<$eof"
			if [[ -n $written ]]; then
				cat "$md"
			fi
			echo "$eof"
		} >>"$GITHUB_OUTPUT"
	fi
	case $code in
	0) echo "bootstrap-ci: diff written to $md (changed: $changed, window steps: $windows)" >&2 ;;
	1) echo "bootstrap-ci: diff written to $md: a Kustomization fails to build at head (its FAIL is in the Markdown)" >&2 ;;
	*) echo "bootstrap-ci: diff refused its input (usage or input error)" >&2 ;;
	esac
	exit "$code"
}

if [[ ${CHECK_MODE:-check} == diff ]]; then
	diff_mode
fi

sarif=${CHECK_SARIF:-bootstrap.sarif}
junit=${CHECK_JUNIT:-bootstrap-junit.xml}
args=(check --repo "${CHECK_REPO:-.}" --sarif "$sarif" --junit "$junit")
env_args
extra_args

"$CHECK_BIN" version >&2 || true
set +e
"$CHECK_BIN" "${args[@]}"
code=$?
set -e
for f in "$sarif" "$junit"; do
	[[ -s $f ]] || echo "bootstrap-ci: $f was not written (exit $code: see the report above)" >&2
done
if [[ -n ${GITHUB_OUTPUT:-} ]]; then
	{
		echo "exit-code=$code"
		echo "sarif=$sarif"
		echo "junit=$junit"
	} >>"$GITHUB_OUTPUT"
fi
case $code in
0) echo "bootstrap-ci: check passed" >&2 ;;
1) echo "bootstrap-ci: check failed: a gate failed (findings in $sarif)" >&2 ;;
2) echo "bootstrap-ci: check refused its input (usage or input error)" >&2 ;;
3) echo "bootstrap-ci: check incomplete: a required check could not run (skip) — not a pass" >&2 ;;
esac
exit "$code"
