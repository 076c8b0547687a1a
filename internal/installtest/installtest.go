// Package installtest holds what the tests that build bootstrap the way a
// user's tool does share (pkg/components/bundles' go install and fresh-clone
// tests, cmd/bootstrap's pre-commit hook test): their gate, a GOPROXY that
// reads this machine's module cache first, and a clone of HEAD. Test code
// only; docs/development.md, "Flux release bundles", says how to run them.
package installtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Env gates the tests: each is a full build from scratch (minutes), so
// they run only when it is set to a non-empty value.
const Env = "BOOTSTRAP_TEST_GOINSTALL"

// Require skips t unless Env is set and the tools are on PATH.
func Require(t testing.TB, tools ...string) {
	t.Helper()
	if os.Getenv(Env) == "" {
		t.Skipf("builds bootstrap from scratch the way a user's tool does (minutes): set %s=1", Env)
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed: %v", tool, err)
		}
	}
}

// GoEnv is the environment for a go command building like a user's tool,
// appended to this process's: GOPROXY serves modules from this machine's
// module cache first, so a build in a fresh GOPATH (pre-commit's) needs no
// network for what the cache holds, then the configured proxy; GOCACHE is
// this machine's, named because callers may move HOME; -trimpath keeps the
// build cache's keys free of the temporary paths, so a second run is fast.
func GoEnv(t testing.TB) []string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE", "GOPROXY", "GOCACHE").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	v := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(v) != 3 {
		t.Fatalf("go env GOMODCACHE GOPROXY GOCACHE: %q", out)
	}
	proxy := "file://" + filepath.ToSlash(filepath.Join(v[0], "cache", "download")) + "," + v[1]
	return append(os.Environ(), "GOPROXY="+proxy, "GOCACHE="+v[2], "GOFLAGS=-trimpath", "GOWORK=off")
}

// Git runs git in dir with env (nil: this process's) and returns its
// trimmed output; a failure fails t.
func Git(t testing.TB, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// CloneHEAD clones the repository holding the working directory, at HEAD,
// into dir: what a user's clone has, not the working tree's uncommitted
// files.
func CloneHEAD(t testing.TB, dir string) string {
	t.Helper()
	top := Git(t, ".", nil, "rev-parse", "--show-toplevel")
	Git(t, ".", nil, "clone", "-q", top, dir)
	return dir
}
