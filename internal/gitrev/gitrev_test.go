package gitrev

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// commit writes files (path → content; "" removes) and commits them.
func commit(t *testing.T, r *git.Repository, dir, msg string, files map[string]string) {
	t.Helper()
	wt, err := r.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range files {
		full := filepath.Join(dir, p)
		if c == "" {
			if _, err := wt.Remove(p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := wt.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := wt.Commit(msg, &git.CommitOptions{Author: &object.Signature{Name: "t", Email: "t@example.com", When: time.Unix(1700000000, 0)}}); err != nil {
		t.Fatal(err)
	}
}

func TestDiffGitrevResolveAndMaterialize(t *testing.T) {
	dir := t.TempDir()
	r, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	commit(t, r, dir, "one", map[string]string{"a.yaml": "one\n", "sub/b.yaml": "b\n"})
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	wt, _ := r.Worktree()
	if _, err := wt.Add("link"); err != nil {
		t.Fatal(err)
	}
	commit(t, r, dir, "two", map[string]string{"a.yaml": "two\n", "sub/b.yaml": ""})

	g, err := Open(filepath.Join(dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		rev, want string // want: a.yaml's content; "" an input error
	}{
		{"HEAD", "two\n"},
		{"HEAD~1", "one\n"},
		{"master", "two\n"},
		{"nosuchbranch", ""},
		{"0123456789abcdef0123456789abcdef01234567", ""},
	} {
		t.Run(tc.rev, func(t *testing.T) {
			c, err := g.Resolve("--base", tc.rev)
			if tc.want == "" {
				if err == nil || !verify.IsInput(err) || !strings.Contains(err.Error(), tc.rev) || !strings.Contains(err.Error(), "--base") {
					t.Fatalf("want an input error naming %q and --base, got %v", tc.rev, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// An abbreviated hash resolves to the same commit.
			if c2, err := g.Resolve("--head", c.Hash.String()[:10]); err != nil || c2.Hash != c.Hash {
				t.Fatalf("abbreviated hash: %v %v", c2, err)
			}
			out, notes, cleanup, err := g.Extract(c, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			defer cleanup()
			b, err := os.ReadFile(filepath.Join(out, "a.yaml"))
			if err != nil || string(b) != tc.want {
				t.Fatalf("a.yaml = %q, %v; want %q", b, err, tc.want)
			}
			_, errB := os.Stat(filepath.Join(out, "sub/b.yaml"))
			if (tc.rev == "HEAD~1") != (errB == nil) {
				t.Fatalf("sub/b.yaml present=%v at %s", errB == nil, tc.rev)
			}
			if _, err := os.Lstat(filepath.Join(out, "link")); err == nil {
				t.Fatal("the symlink was materialized")
			}
			if tc.rev != "HEAD~1" && !strings.Contains(strings.Join(notes, ";"), "symbolic link") {
				t.Fatalf("notes %v: want the symlink noted", notes)
			}
			if _, err := os.Stat(filepath.Join(out, ".git")); err == nil {
				t.Fatal(".git materialized")
			}
		})
	}

	// --repo a directory inside the work tree: its subtree only.
	sub, err := Open(filepath.Join(dir, "sub"))
	if err != nil || sub.Prefix != "sub" {
		t.Fatalf("Open(sub): %+v %v", sub, err)
	}
	c1, _ := sub.Resolve("--base", "HEAD~1")
	subOut := t.TempDir()
	if _, err := sub.Materialize(c1, subOut, Limits{}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(subOut, "b.yaml")); err != nil || string(b) != "b\n" {
		t.Fatalf("sub/b.yaml at the root of the subtree: %q %v", b, err)
	}
	c2, _ := sub.Resolve("--head", "HEAD")
	if _, err := sub.Materialize(c2, t.TempDir(), Limits{}); err == nil || !verify.IsInput(err) {
		t.Fatalf("sub is gone at HEAD: want an input error, got %v", err)
	}

	// Bounds: a blob over MaxFileBytes is left out, noted; too many files is an error.
	c, _ := g.Resolve("--head", "HEAD")
	out := t.TempDir()
	notes, err := g.Materialize(c, out, Limits{MaxFileBytes: 2})
	if err != nil || !strings.Contains(strings.Join(notes, ";"), "a.yaml") {
		t.Fatalf("notes %v err %v", notes, err)
	}
	old, _ := g.Resolve("--base", "HEAD~1") // two files
	if _, err := g.Materialize(old, t.TempDir(), Limits{MaxFiles: 1, MaxFileBytes: 100}); err == nil {
		t.Fatal("want an error past MaxFiles")
	}
}

func TestDiffGitrevDefaultBase(t *testing.T) {
	dir := t.TempDir()
	r, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	commit(t, r, dir, "one", map[string]string{"a.yaml": "one\n"})
	g, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := g.Resolve("--base", "HEAD")
	// A branch off master with one commit: base is the fork point.
	wt, _ := r.Worktree()
	if err := wt.Checkout(&git.CheckoutOptions{Branch: "refs/heads/topic", Create: true}); err != nil {
		t.Fatal(err)
	}
	commit(t, r, dir, "two", map[string]string{"a.yaml": "two\n"})
	b, err := g.DefaultBase()
	if err != nil || b.Hash != first.Hash || !strings.Contains(b.Why, "master") {
		t.Fatalf("clean topic branch: base %v (%s), err %v; want %s", b, b.Why, err, first)
	}
	// Dirty: HEAD.
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("three\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	head, _ := g.Resolve("--base", "HEAD")
	b, err = g.DefaultBase()
	if err != nil || b.Hash != head.Hash || !strings.Contains(b.Why, "uncommitted") {
		t.Fatalf("dirty: base %v (%s), err %v; want HEAD", b, b.Why, err)
	}
	// Not a repository.
	if _, err := Open(t.TempDir()); err == nil || !verify.IsInput(err) {
		t.Fatalf("want an input error outside a repository, got %v", err)
	}
}
