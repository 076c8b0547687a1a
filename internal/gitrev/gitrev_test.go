package gitrev

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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

// git runs the git command line in dir (git is one of the project's
// installed packages: hack/sandbox/install-deps.sh).
func gitCLI(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// TestDiffGitrevShallow (issue 56 item 2): a shallow clone — a CI
// checkout's default — has no base: an input error naming the fetch that
// fixes it, for --base and for the default base; a clone with the history
// (the negative) resolves both; a blob the object store lacks (a partial
// clone) is left out with a note, not the end of the run.
func TestDiffGitrevShallow(t *testing.T) {
	src := t.TempDir()
	r, err := git.PlainInit(src, false)
	if err != nil {
		t.Fatal(err)
	}
	commit(t, r, src, "one", map[string]string{"a.yaml": "one\n"})
	commit(t, r, src, "two", map[string]string{"a.yaml": "two\n", "docs/img.png": "png\n"})
	for _, tc := range []struct {
		name    string
		clone   []string
		shallow bool
	}{
		{"depth 1", []string{"--depth", "1", "--no-local"}, true},
		{"full", []string{"--no-local"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "c")
			gitCLI(t, src, append(append([]string{"clone", "-q"}, tc.clone...), "file://"+src, dst)...)
			g, err := Open(dst)
			if err != nil {
				t.Fatal(err)
			}
			_, err = g.Resolve("--base", "HEAD~1")
			if tc.shallow != (err != nil) || (err != nil && (!verify.IsInput(err) || !strings.Contains(err.Error(), "a shallow clone") || !strings.Contains(err.Error(), "git fetch --unshallow") || !strings.Contains(err.Error(), "fetch-depth: 0"))) {
				t.Errorf("Resolve HEAD~1: %v (shallow %t)", err, tc.shallow)
			}
			// Without a default branch the shallow clone has no base at all.
			gitCLI(t, dst, "checkout", "-q", "--detach")
			for _, ref := range []string{"refs/remotes/origin/HEAD", "refs/remotes/origin/master", "refs/heads/master"} {
				gitCLI(t, dst, "update-ref", "-d", ref)
			}
			_, err = g.DefaultBase()
			if tc.shallow != (err != nil) || (err != nil && !strings.Contains(err.Error(), "pass --base")) {
				t.Errorf("DefaultBase: %v (shallow %t)", err, tc.shallow)
			}
		})
	}
	t.Run("a blob not fetched", func(t *testing.T) {
		dst := filepath.Join(t.TempDir(), "c")
		gitCLI(t, src, "clone", "-q", "--no-local", "file://"+src, dst)
		g, err := Open(dst)
		if err != nil {
			t.Fatal(err)
		}
		head, err := g.Resolve("--head", "HEAD")
		if err != nil {
			t.Fatal(err)
		}
		// Remove the packed objects and keep the loose ones of the commit,
		// its tree and a.yaml: docs/img.png's blob is gone.
		c, _ := g.r.CommitObject(head.Hash)
		tree, _ := c.Tree()
		keep := []string{head.Hash.String(), tree.Hash.String()}
		for _, e := range tree.Entries {
			if e.Name == "a.yaml" {
				keep = append(keep, e.Hash.String())
			}
			if e.Name == "docs" {
				keep = append(keep, e.Hash.String())
			}
		}
		unpackOnly(t, dst, keep)
		g, err = Open(dst)
		if err != nil {
			t.Fatal(err)
		}
		out := t.TempDir()
		notes, err := g.Materialize(head, out, Limits{})
		if err != nil || len(notes) != 1 || !strings.Contains(notes[0], "docs/img.png: its content is not in the local object store") {
			t.Fatalf("Materialize: %v, notes %q", err, notes)
		}
		if b, err := os.ReadFile(filepath.Join(out, "a.yaml")); err != nil || string(b) != "two\n" {
			t.Errorf("a.yaml: %q, %v", b, err)
		}
	})
}

// unpackOnly leaves dst's object store with the loose objects keep names
// alone (git unpack-objects of its pack, then every other object removed).
func unpackOnly(t *testing.T, dst string, keep []string) {
	t.Helper()
	packs, _ := filepath.Glob(filepath.Join(dst, ".git", "objects", "pack", "*.pack"))
	for _, p := range packs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(p, p+".old"); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("git", "unpack-objects", "-q")
		cmd.Dir, cmd.Stdin = dst, strings.NewReader(string(b))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("unpack-objects: %v\n%s", err, out)
		}
		_ = os.Remove(p + ".old")
		_ = os.Remove(strings.TrimSuffix(p, ".pack") + ".idx")
	}
	objs := filepath.Join(dst, ".git", "objects")
	dirs, _ := os.ReadDir(objs)
	for _, d := range dirs {
		if len(d.Name()) != 2 {
			continue
		}
		files, _ := os.ReadDir(filepath.Join(objs, d.Name()))
		for _, f := range files {
			h := d.Name() + f.Name()
			if !slices.Contains(keep, h) {
				_ = os.Remove(filepath.Join(objs, d.Name(), f.Name()))
			}
		}
	}
}

// TestDiffGitrevLinksSameBlobs: a second tree's file with a blob (and
// mode) an earlier tree wrote is a link to it — not read from the object
// store and written again — with the same content; a changed file is
// written (the negative).
func TestDiffGitrevLinksSameBlobs(t *testing.T) {
	src := t.TempDir()
	r, err := git.PlainInit(src, false)
	if err != nil {
		t.Fatal(err)
	}
	commit(t, r, src, "one", map[string]string{"same.yaml": "same\n", "changed.yaml": "one\n"})
	commit(t, r, src, "two", map[string]string{"changed.yaml": "two\n"})
	g, err := Open(src)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, rev := range []string{"HEAD~1", "HEAD"} {
		c, err := g.Resolve("--base", rev)
		if err != nil {
			t.Fatal(err)
		}
		d := t.TempDir()
		if _, err := g.Materialize(c, d, Limits{}); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	stat := func(d, f string) os.FileInfo {
		fi, err := os.Stat(filepath.Join(d, f))
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	if !os.SameFile(stat(dirs[0], "same.yaml"), stat(dirs[1], "same.yaml")) {
		t.Errorf("same.yaml: not linked")
	}
	if os.SameFile(stat(dirs[0], "changed.yaml"), stat(dirs[1], "changed.yaml")) {
		t.Errorf("changed.yaml: linked, want written")
	}
	if b, _ := os.ReadFile(filepath.Join(dirs[1], "changed.yaml")); string(b) != "two\n" {
		t.Errorf("changed.yaml at HEAD: %q", b)
	}
}

// A file the checkout holds with the blob's content is linked into the
// tree (no second write), one changed in the checkout since is written
// from the object store; the checkout is left as it was.
func TestMaterializeLinksTheCheckout(t *testing.T) {
	dir := t.TempDir()
	r, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	commit(t, r, dir, "one", map[string]string{"same.yaml": "same\n", "sub/edited.yaml": "committed\n"})
	if err := os.WriteFile(filepath.Join(dir, "sub/edited.yaml"), []byte("edited, not committed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := g.Resolve("--base", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	out, _, cleanup, err := g.Extract(c, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	sameFile := func(a, b string) bool {
		fa, err1 := os.Stat(a)
		fb, err2 := os.Stat(b)
		return err1 == nil && err2 == nil && os.SameFile(fa, fb)
	}
	if !sameFile(filepath.Join(dir, "same.yaml"), filepath.Join(out, "same.yaml")) {
		t.Error("same.yaml: want the checkout's file linked")
	}
	if sameFile(filepath.Join(dir, "sub/edited.yaml"), filepath.Join(out, "sub/edited.yaml")) {
		t.Error("sub/edited.yaml: linked, though the checkout's differs from the commit")
	}
	if b, _ := os.ReadFile(filepath.Join(out, "sub/edited.yaml")); string(b) != "committed\n" {
		t.Errorf("sub/edited.yaml in the tree: %q, want the commit's", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "sub/edited.yaml")); string(b) != "edited, not committed\n" {
		t.Errorf("the checkout changed: %q", b)
	}
}

// Two handles of one repository (Reopen) write two commits at once, each
// as committed (go test -race: nothing shared between them).
func TestReopenMaterializesAtOnce(t *testing.T) {
	dir := t.TempDir()
	r, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	commit(t, r, dir, "one", map[string]string{"a.yaml": "one\n", "sub/b.yaml": "b\n"})
	commit(t, r, dir, "two", map[string]string{"a.yaml": "two\n", "sub/b.yaml": "b\n"})
	g, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	one, err := g.Resolve("--base", "HEAD~1")
	if err != nil {
		t.Fatal(err)
	}
	two, err := g.Resolve("--head", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	g2, err := g.Reopen()
	if err != nil {
		t.Fatal(err)
	}
	if g2.Top != g.Top || g2.Prefix != g.Prefix {
		t.Fatalf("reopened at %s/%s, want %s/%s", g2.Top, g2.Prefix, g.Top, g.Prefix)
	}
	outs := make([]string, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, h := range []struct {
		g *Repo
		c Commit
	}{{g, one}, {g2, two}} {
		wg.Go(func() {
			var cleanup func()
			outs[i], _, cleanup, errs[i] = h.g.Extract(h.c, Limits{})
			if errs[i] == nil {
				t.Cleanup(cleanup)
			}
		})
	}
	wg.Wait()
	for i, want := range []string{"one\n", "two\n"} {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if b, _ := os.ReadFile(filepath.Join(outs[i], "a.yaml")); string(b) != want {
			t.Errorf("tree %d: a.yaml %q, want %q", i, b, want)
		}
		if b, _ := os.ReadFile(filepath.Join(outs[i], "sub", "b.yaml")); string(b) != "b\n" {
			t.Errorf("tree %d: sub/b.yaml %q", i, b)
		}
	}
}

// A handle Reopen made links the files the other wrote (the same blob),
// as one handle links its own earlier trees'.
func TestReopenSharesWritten(t *testing.T) {
	dir := t.TempDir()
	r, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	commit(t, r, dir, "one", map[string]string{"a.yaml": "one\n", "b.yaml": "b\n"})
	commit(t, r, dir, "two", map[string]string{"a.yaml": "two\n", "b.yaml": "b\n"})
	// The checkout's b.yaml differs: written from the object store, not linked from it.
	if err := os.WriteFile(filepath.Join(dir, "b.yaml"), []byte("edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	g2, err := g.Reopen()
	if err != nil {
		t.Fatal(err)
	}
	one, _ := g.Resolve("--base", "HEAD~1")
	two, _ := g.Resolve("--head", "HEAD")
	d1, _, c1, err := g.Extract(one, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer c1()
	d2, _, c2, err := g2.Extract(two, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer c2()
	f1, err1 := os.Stat(filepath.Join(d1, "b.yaml"))
	f2, err2 := os.Stat(filepath.Join(d2, "b.yaml"))
	if err1 != nil || err2 != nil || !os.SameFile(f1, f2) {
		t.Fatalf("b.yaml: the second handle did not link the first's (%v, %v)", err1, err2)
	}
	if b, _ := os.ReadFile(filepath.Join(d2, "b.yaml")); string(b) != "b\n" {
		t.Fatalf("b.yaml: %q", b)
	}
}
