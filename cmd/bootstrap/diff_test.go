package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
)

const seedFixture = "../../internal/diff/testdata/seed/"

// seedRepo is a Git repository of the seed fixture: commit 1 its base,
// commit 2 its head, then edit (if not nil) left uncommitted.
func seedRepo(t *testing.T, edit func(dir string)) string {
	t.Helper()
	dir := t.TempDir()
	r, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	wt, err := r.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	for i, tree := range []string{"base", "head"} {
		src := seedFixture + tree
		err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(src, p)
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			dst := filepath.Join(dir, rel)
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			return os.WriteFile(dst, b, 0o644)
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := wt.Commit(tree, &git.CommitOptions{Author: &object.Signature{Name: "t", Email: "t@example.com", When: time.Unix(1700000000+int64(i), 0)}}); err != nil {
			t.Fatal(err)
		}
	}
	if edit != nil {
		edit(dir)
	}
	return dir
}

// TestDiffBadInput: every bad flag is exit 2 naming the flag (or the
// revision) and the fix, and nothing is written on stdout.
func TestDiffBadInput(t *testing.T) {
	t.Parallel()
	repo := seedRepo(t, nil)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"unknown --base", []string{"--base", "nosuchbranch"}, []string{`--base "nosuchbranch": no such revision`, "pass a branch, tag or commit"}},
		{"unknown --head", []string{"--head", "v9.9.9"}, []string{`--head "v9.9.9": no such revision`}},
		{"--base that is an option", []string{"--base=--all"}, []string{`--base "--all": not a revision`}},
		{"--env and --path", []string{"--env", "dev", "--path", "clusters/dev"}, []string{"--env and --path are exclusive"}},
		{"--path neither revision has", []string{"--path", "clusters/nope", "--base", "HEAD~1"}, []string{"--path clusters/nope: a directory at neither revision"}},
		{"--flux-version not embedded", []string{"--flux-version", "v1.0.0"}, []string{"not embedded in this build"}},
		{"-o yaml", []string{"-o", "yaml"}, []string{`--output "yaml": want text, json or markdown`}},
		{"--markdown-limit too small", []string{"-o", "markdown", "--markdown-limit", "100"}, []string{"--markdown-limit 100: want at least 2048 bytes"}},
		{"--markdown-limit negative", []string{"-o", "markdown", "--markdown-limit=-1"}, []string{"--markdown-limit -1: want at least"}},
		{"--markdown-limit without -o markdown", []string{"--markdown-limit", "4096"}, []string{"--markdown-limit is for -o markdown (the output is text)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, append([]string{"diff", "--repo", repo}, tc.args...)...)
			if r.code != 2 {
				t.Errorf("exit %d, want 2:\n%s", r.code, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			if r.stdout != "" {
				t.Errorf("stdout written on bad input:\n%s", r.stdout)
			}
		})
	}
	t.Run("not a Git repository", func(t *testing.T) {
		t.Parallel()
		r := runCLI(t, "diff", "--repo", t.TempDir())
		if r.code != 2 || !strings.Contains(r.stderr, "not inside a Git repository") {
			t.Errorf("exit %d:\n%s", r.code, r.stderr)
		}
	})
}

// TestDiffCommand: the seed's commit shows its window (exit 0), as JSON
// too; an uncommitted change that breaks a build is exit 1 with its FAIL
// (the default base of a dirty work tree is HEAD).
func TestDiffCommand(t *testing.T) {
	t.Parallel()
	repo := seedRepo(t, nil)
	r := runCLI(t, "diff", "--repo", repo, "--base", "HEAD~1", "--head", "HEAD", "--flux-version", "v2.8.5")
	if r.code != 0 || !strings.Contains(r.stdout, "WINDOW if flux-system/infra reconciles before flux-system/vars: HelmRelease.helm.toolkit.fluxcd.io kube-system/cilium renders `k8sServiceHost: null` (fail open on this release) → Helm upgrade") {
		t.Errorf("exit %d, want 0 with the window:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, "diff", "--repo", repo, "--env", "dev", "--base", "HEAD~1", "--head", "HEAD", "-o", "json")
	var doc struct {
		Clusters []struct {
			Path    string
			Windows []struct{ Reader, Applier string }
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || r.code != 0 || len(doc.Clusters) != 1 || len(doc.Clusters[0].Windows) != 1 || doc.Clusters[0].Windows[0].Applier != "flux-system/vars" {
		t.Errorf("exit %d, err %v, doc %+v:\n%s\n%s", r.code, err, doc, r.stdout, r.stderr)
	}

	broken := seedRepo(t, func(dir string) {
		if err := os.WriteFile(filepath.Join(dir, "infra", "kustomization.yaml"), []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - missing.yaml\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	r = runCLI(t, "diff", "--repo", broken)
	if r.code != 1 || !strings.Contains(r.stdout, "FAIL Kustomization flux-system/infra") || !strings.Contains(r.stdout, "the work tree has uncommitted changes") {
		t.Errorf("exit %d, want 1 with the FAIL against HEAD:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestDiffOutputOnlyForDiff: markdown is diff's format; another command
// refuses it as it did.
func TestDiffOutputOnlyForDiff(t *testing.T) {
	t.Parallel()
	r := runCLI(t, "check", "--repo", t.TempDir(), "-o", "markdown")
	if r.code != 2 || !strings.Contains(r.stderr, `--output "markdown": want text or json`) {
		t.Errorf("exit %d, want 2 refusing markdown:\n%s", r.code, r.stderr)
	}
}

// TestDiffExitCode is the exit-code table of docs/diff.md: without
// --exit-code 1 only for a failure at head; with it, as git diff, 1 for
// any difference (a failure is one), 0 for none. Each format says the same.
func TestDiffExitCode(t *testing.T) {
	t.Parallel()
	repo := seedRepo(t, nil)
	broken := seedRepo(t, func(dir string) {
		if err := os.WriteFile(filepath.Join(dir, "infra", "kustomization.yaml"), []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - missing.yaml\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	for _, tc := range []struct {
		name     string
		repo     string
		args     []string
		code     int
		markdown string // the marker's verdict
	}{
		{"changes", repo, []string{"--base", "HEAD~1", "--head", "HEAD"}, 0, "changed=true failed=false windows=1"},
		{"changes, --exit-code", repo, []string{"--base", "HEAD~1", "--head", "HEAD", "--exit-code"}, 1, "changed=true failed=false windows=1"},
		{"no change", repo, []string{"--base", "HEAD", "--head", "HEAD"}, 0, "changed=false failed=false windows=0"},
		{"no change, --exit-code", repo, []string{"--base", "HEAD", "--head", "HEAD", "--exit-code"}, 0, "changed=false failed=false windows=0"},
		{"fails at head", broken, nil, 1, "changed=true failed=true"},
		{"fails at head, --exit-code", broken, []string{"--exit-code"}, 1, "changed=true failed=true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, format := range []string{"text", "json", "markdown"} {
				r := runCLI(t, append([]string{"diff", "--repo", tc.repo, "--flux-version", "v2.8.5", "-o", format}, tc.args...)...)
				if r.code != tc.code {
					t.Errorf("-o %s: exit %d, want %d:\n%s\n%s", format, r.code, tc.code, r.stdout, r.stderr)
				}
				switch format {
				case "markdown":
					if !strings.HasPrefix(r.stdout, "<!-- bootstrap-diff "+tc.markdown) || !strings.Contains(r.stdout, "| Cluster | Kustomization |") {
						t.Errorf("-o markdown: want the marker %q and the table:\n%s", tc.markdown, r.stdout)
					}
				case "json":
					var doc struct {
						Schema          string
						Changed, Failed bool
					}
					if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || doc.Schema != "bootstrap.diff/v1" ||
						!strings.Contains(tc.markdown, "changed="+strconv.FormatBool(doc.Changed)) || !strings.Contains(tc.markdown, "failed="+strconv.FormatBool(doc.Failed)) {
						t.Errorf("-o json: %v %+v, want %s:\n%s", err, doc, tc.markdown, r.stdout)
					}
				}
			}
		})
	}
}
