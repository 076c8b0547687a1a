package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/homelab-ops/bootstrap/internal/installtest"
)

// TestPreCommitHookDefinition: the hook is `language: golang`, so pre-commit
// builds it with a plain `go install ./...` (which embeds the committed
// bundles), and its entry carries `check` itself: a config's args replace
// the hook's args, so `check` there would be lost as soon as a user sets
// [--env, dev].
func TestPreCommitHookDefinition(t *testing.T) {
	b, err := os.ReadFile("../../.pre-commit-hooks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var hooks []struct {
		ID             string   `json:"id"`
		Entry          string   `json:"entry"`
		Language       string   `json:"language"`
		Args           []string `json:"args"`
		PassFilenames  *bool    `json:"pass_filenames"`
		AlwaysRun      bool     `json:"always_run"`
		AdditionalDeps []string `json:"additional_dependencies"`
	}
	// Only the fields that matter here; name, description, ... are not read.
	if err := yaml.Unmarshal(b, &hooks); err != nil {
		t.Fatal(err)
	}
	if len(hooks) != 1 || hooks[0].ID != "bootstrap-check" {
		t.Fatalf("hooks = %+v, want one, bootstrap-check", hooks)
	}
	h := hooks[0]
	if h.Language != "golang" {
		t.Errorf("language = %q, want golang (pre-commit's go install ./... builds the binary, bundles committed)", h.Language)
	}
	if f := strings.Fields(h.Entry); len(f) < 2 || f[0] != "bootstrap" || f[1] != "check" {
		t.Errorf("entry = %q, want `bootstrap check ...`", h.Entry)
	}
	if len(h.Args) != 0 || len(h.AdditionalDeps) != 0 {
		t.Errorf("args %q, additional_dependencies %q: want none (a config's args replace the hook's)", h.Args, h.AdditionalDeps)
	}
	if h.PassFilenames == nil || *h.PassFilenames || !h.AlwaysRun {
		t.Errorf("pass_filenames %v, always_run %v: want false, true (the check is of whole environments, every commit)", h.PassFilenames, h.AlwaysRun)
	}
}

// TestPreCommitHook runs the hook of .pre-commit-hooks.yaml with pre-commit
// itself (Debian's package, hack/sandbox/install-deps.sh) as a user's
// `git commit` does: the hook repository is this repository at HEAD (a git
// clone, with the working tree's hook definition committed on top), which
// pre-commit's `language: golang` clones again and builds with
// `go install ./...` in a GOPATH of its own — no make, no generate step, so
// the binary embeds only what is committed. The repositories committed are
// our fixtures: a clean one commits; one with an undefined variable does
// not, and the output names the variable and its file and line.
//
// A full build: it runs only with BOOTSTRAP_TEST_GOINSTALL=1. Modules come
// from this machine's module cache first (file:// GOPROXY), then the
// configured proxy; -trimpath lets the shared build cache serve a second run.
func TestPreCommitHook(t *testing.T) {
	installtest.Require(t, "pre-commit", "git", "go") // hack/sandbox/install-deps.sh installs pre-commit
	tmp := t.TempDir()
	env := append(installtest.GoEnv(t), "HOME="+tmp, "PRE_COMMIT_HOME="+filepath.Join(tmp, "pre-commit"),
		"KUBECONFIG="+filepath.Join(tmp, "none"),
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.org", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.org",
		"GIT_CONFIG_NOSYSTEM=1")
	run := func(dir, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v in %s: %v\n%s", name, args, dir, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	hooks := installtest.CloneHEAD(t, filepath.Join(tmp, "hook-repo"))
	hookCopyFile(t, "../../.pre-commit-hooks.yaml", filepath.Join(hooks, ".pre-commit-hooks.yaml"))
	if run(hooks, "git", "status", "--porcelain") != "" {
		run(hooks, "git", "commit", "-q", "-am", "the working tree's hook definition")
	}
	rev := run(hooks, "git", "rev-parse", "HEAD")
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
			run(repo, "git", "init", "-q")
			run(repo, "pre-commit", "install")
			run(repo, "git", "add", ".")
			// The first commit builds the hook (go install ./...), once for all.
			cmd := exec.Command("git", "commit", "-m", "change")
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
