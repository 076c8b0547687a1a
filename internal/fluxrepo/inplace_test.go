package fluxrepo

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// inPlaceTree is the clean fixture with everything the copy's rules judge:
// an alias bomb a child's path reads, a file over the read bound, a
// symlink, a file and a directory .sourceignore excludes (broken YAML: a
// build reading them fails).
func inPlaceTree(t *testing.T) string {
	t.Helper()
	repo := copyTree(t, clean)
	write := func(rel, s string) {
		p := filepath.Join(repo, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("apps/laughs.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: laughs\ndata:\n  x: y\nx-"+bomb())
	write("apps/big.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  x: "+strings.Repeat("x", 8<<10)+"\n")
	write(".sourceignore", "apps/ignored.yaml\nignored-dir/\n")
	write("apps/ignored.yaml", "not: [valid\n")
	write("ignored-dir/sub/a.yaml", "not: [valid\n")
	if err := os.Symlink("web.yaml", filepath.Join(repo, "apps", "link.yaml")); err != nil {
		t.Fatal(err)
	}
	return repo
}

// envSummary is what a load found, for comparing two loads: the notes,
// holes, and each Kustomization's outcome and rendered objects.
func envSummary(e *Env) string {
	var b strings.Builder
	fmt.Fprintf(&b, "notes %q\nroot %v files %v\n", e.Notes, e.RootErr, e.RootFiles)
	for _, h := range e.Holes {
		fmt.Fprintf(&b, "hole %+v\n", *h)
	}
	for _, k := range e.Kustomizations {
		fmt.Fprintf(&b, "%s built %v note %q err %v files %v repaired %d\n", k.Ref(), k.Built, k.Note, k.Err, k.Files, len(k.Repaired))
		for _, r := range k.Resources {
			y, _ := r.AsYAML()
			b.Write(y)
		}
	}
	return b.String()
}

// TestLoadInPlaceAsCopy: a tree loaded in place is judged exactly as its
// copy is — the bomb refused by the build reading it, the file over the
// bound left out and noted, the symlink left out and noted, the ignored
// files unread — and what the copy leaves out is gone from the tree.
func TestLoadInPlaceAsCopy(t *testing.T) {
	for _, holes := range []bool{false, true} {
		t.Run(fmt.Sprintf("holes=%v", holes), func(t *testing.T) {
			o := Options{Path: "clusters/dev", KeepGoing: true, Holes: holes, MaxFileBytes: 4 << 10}
			o.Repo = inPlaceTree(t)
			copied, err := Load(o)
			if err != nil {
				t.Fatal(err)
			}
			o.Repo = inPlaceTree(t)
			owned, err := LoadInPlace(o)
			if err != nil {
				t.Fatal(err)
			}
			want, got := envSummary(copied), envSummary(owned)
			if got != want {
				t.Fatalf("in place:\n%s\nthe copy:\n%s", got, want)
			}
			// The rules held (the same in both, so checked once).
			if !slices.ContainsFunc(owned.Notes, func(n string) bool { return strings.HasPrefix(n, "apps/big.yaml: larger than") }) ||
				!slices.ContainsFunc(owned.Notes, func(n string) bool { return strings.HasPrefix(n, "apps/link.yaml (a symlink to web.yaml)") }) {
				t.Errorf("notes %q: want the big file and the symlink noted", owned.Notes)
			}
			apps := owned.Kustomization("flux-system", "apps")
			if apps == nil || apps.Err == nil || !strings.Contains(apps.Err.Error(), "apps/laughs.yaml:17: its aliases expand") {
				t.Errorf("apps: %+v, want the bomb refused", apps)
			}
			for _, gone := range []string{"apps/big.yaml", "apps/link.yaml", "apps/ignored.yaml", "ignored-dir"} {
				if _, err := os.Lstat(filepath.Join(o.Repo, gone)); !os.IsNotExist(err) {
					t.Errorf("%s: still in the tree (%v)", gone, err)
				}
			}
			if b, err := os.ReadFile(filepath.Join(o.Repo, "apps/laughs.yaml")); err != nil || len(b) != 0 {
				t.Errorf("the bomb: %d bytes (%v), want emptied", len(b), err)
			}
		})
	}
}

// TestLoadInPlaceRefusesCheckout: a directory holding .git is never
// changed in place, and nothing in it is removed.
func TestLoadInPlaceRefusesCheckout(t *testing.T) {
	repo := inPlaceTree(t)
	if err := os.MkdirAll(filepath.Join(repo, ".git"), 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := LoadInPlace(Options{Repo: repo, Path: "clusters/dev"})
	if err == nil || !strings.Contains(err.Error(), "a Git checkout is never prepared in place") {
		t.Fatalf("err %v, want the checkout refused", err)
	}
	for _, kept := range []string{"apps/big.yaml", "apps/link.yaml", "apps/ignored.yaml"} {
		if _, err := os.Lstat(filepath.Join(repo, kept)); err != nil {
			t.Errorf("%s: %v, want it untouched", kept, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "apps/laughs.yaml")); len(b) == 0 {
		t.Error("the bomb was emptied in a checkout")
	}
}
