package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPreCommitHook runs the hook of .pre-commit-hooks.yaml with pre-commit
// itself (Debian's package, hack/sandbox/install-deps.sh) as a user's
// `git commit` does: the hook repository is a git repository holding this
// tree's hook definition and entry script, the repositories committed are
// our fixtures. A clean one commits; one with an undefined variable does not,
// and the output names the variable and its file and line. The binary is this
// test binary (BOOTSTRAP_PRECOMMIT_BIN), so the hook's one-time `make build`
// in pre-commit's clone is not repeated here (it takes minutes cold).
func TestPreCommitHook(t *testing.T) {
	for _, tool := range []string{"pre-commit", "git", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (hack/sandbox/install-deps.sh installs it): %v", tool, err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "bootstrap")
	wrapper := "#!/bin/sh\n" + ciHelperEnv + "=1 exec '" + self + "' -test.run='^TestCIHelperProcess$' -- \"$@\"\n"
	if err := os.WriteFile(bin, []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "HOME="+tmp, "PRE_COMMIT_HOME="+filepath.Join(tmp, "pre-commit"),
		"BOOTSTRAP_PRECOMMIT_BIN="+bin, "KUBECONFIG="+filepath.Join(tmp, "none"),
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.org", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.org",
		"GIT_CONFIG_NOSYSTEM=1")
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
		}
		return strings.TrimSpace(string(out))
	}

	hooks := filepath.Join(tmp, "hook-repo")
	for _, f := range []string{".pre-commit-hooks.yaml", "hack/pre-commit/check.sh"} {
		hookCopyFile(t, filepath.Join("../..", f), filepath.Join(hooks, f))
	}
	git(hooks, "init", "-q")
	git(hooks, "add", ".")
	git(hooks, "commit", "-q", "-m", "hook")
	rev := git(hooks, "rev-parse", "HEAD")
	config := func(args string) string {
		c := "repos:\n  - repo: " + hooks + "\n    rev: " + rev + "\n    hooks:\n      - id: bootstrap-check\n"
		if args != "" {
			c += "        args: " + args + "\n"
		}
		return c
	}

	// args "": the hook as configured with no arguments checks every
	// cluster root the repository declares (issue 45).
	tests := []struct {
		fixture string
		args    string
		commits bool
		output  []string
	}{
		{"clean", "[--env, dev]", true, []string{"bootstrap check", "Passed"}},
		{"undefined", "[--env, dev]", false, []string{"Failed", "apps/config.yaml:8", "${audience_name}", "check: FAIL"}},
		{"clean", "", true, []string{"bootstrap check", "Passed"}},
		{"undefined", "", false, []string{"Failed", "apps/config.yaml:8", "${audience_name}", "check: FAIL"}},
	}
	for _, tt := range tests {
		t.Run(tt.fixture+" "+tt.args, func(t *testing.T) {
			repo := filepath.Join(t.TempDir(), tt.fixture)
			hookCopyTree(t, filepath.Join("../../testdata/ci", tt.fixture), repo)
			if err := os.WriteFile(filepath.Join(repo, ".pre-commit-config.yaml"), []byte(config(tt.args)), 0o644); err != nil {
				t.Fatal(err)
			}
			git(repo, "init", "-q")
			cmd := exec.Command("pre-commit", "install")
			cmd.Dir, cmd.Env = repo, env
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("pre-commit install: %v\n%s", err, out)
			}
			git(repo, "add", ".")
			cmd = exec.Command("git", "commit", "-m", "change")
			cmd.Dir, cmd.Env = repo, env
			out, err := cmd.CombinedOutput()
			if committed := err == nil; committed != tt.commits {
				t.Fatalf("commit went through: %v, want %v:\n%s", committed, tt.commits, out)
			}
			for _, s := range tt.output {
				if !strings.Contains(string(out), s) {
					t.Errorf("the commit's output lacks %q:\n%s", s, out)
				}
			}
		})
	}
}

func hookCopyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, fi.Mode().Perm()); err != nil {
		t.Fatal(err)
	}
}

func hookCopyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		hookCopyFile(t, p, filepath.Join(to, rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
