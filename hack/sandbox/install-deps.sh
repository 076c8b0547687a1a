#!/usr/bin/env bash
# Installs the Debian packages the sandbox needs (git for git-http-backend
# and the test helpers, ansible-core for the Ansible example's e2e run,
# pre-commit for the hook's test). Idempotent: apt is only touched when something is
# missing. Needs root (or sudo) only in that case.
set -euo pipefail

need=()
command -v git >/dev/null 2>&1 || need+=(git)
[[ -x /usr/lib/git-core/git-http-backend ]] || need+=(git)
command -v curl >/dev/null 2>&1 || need+=(curl)
# The Ansible example (examples/ansible) is run for real by the e2e suite.
command -v ansible-playbook >/dev/null 2>&1 || need+=(ansible-core)
# The pre-commit hook (.pre-commit-hooks.yaml) is run for real by a test.
command -v pre-commit >/dev/null 2>&1 || need+=(pre-commit)

if [[ ${#need[@]} -eq 0 ]]; then
	echo "install-deps: git, git-http-backend, curl, ansible-playbook and pre-commit present"
	exit 0
fi
sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo"
echo "install-deps: installing ${need[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" ca-certificates
