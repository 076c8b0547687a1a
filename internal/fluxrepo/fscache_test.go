package fluxrepo

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	securefs "github.com/fluxcd/pkg/kustomize/filesys"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// The build filesystem serves the generated kustomization file from memory
// at its one path, caches the copy's files across builds, sees a file
// changed after a failed build (a repair) fresh, and refuses what the
// secure filesystem refuses (outside the root, through a symlink), cached
// or not.
func TestBuildFSCache(t *testing.T) {
	base := t.TempDir()
	if real, err := filepath.EvalSymlinks(base); err == nil {
		base = real
	}
	root := filepath.Join(base, "repo")
	write := func(rel, s string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("app/cm.yaml", "one")
	write("app/kustomization.yaml", "on disk")
	if err := os.WriteFile(filepath.Join(base, "outside.yaml"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "outside.yaml"), filepath.Join(root, "app", "link.yaml")); err != nil {
		t.Fatal(err)
	}
	sec, err := securefs.MakeFsOnDiskSecure(root)
	if err != nil {
		t.Fatal(err)
	}
	cache := newFSCache()
	kfile := filepath.Join(root, "app", "kustomization.yaml")
	cm := filepath.Join(root, "app", "cm.yaml")
	read := func(f *buildFS, p string) string {
		t.Helper()
		b, err := f.ReadFile(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		return string(b)
	}
	refused := func(f *buildFS, p string) {
		t.Helper()
		_, err := f.ReadFile(p)
		var ce *securefs.ConstraintError
		if !errors.As(err, &ce) {
			t.Fatalf("%s: want the secure filesystem's refusal, got %v", p, err)
		}
	}

	// Build 1 (succeeds): the generated file from memory, cm.yaml from disk.
	f := newBuildFS(sec, cache, kfile, []byte("generated"))
	if got := read(f, kfile); got != "generated" || !f.Exists(kfile) || f.IsDir(kfile) {
		t.Fatalf("generated file: %q", got)
	}
	if got := read(f, cm); got != "one" {
		t.Fatalf("cm.yaml: %q", got)
	}
	for range 2 { // the refusals, first asked and cached
		refused(f, filepath.Join(base, "outside.yaml"))
		refused(f, filepath.Join(root, "app", "link.yaml"))
	}
	f.done(true)
	if b, _ := os.ReadFile(kfile); string(b) != "on disk" {
		t.Fatalf("the disk was written: %q", b)
	}

	// Build 2 (another directory, nothing generated there): the disk's
	// kustomization file, cm.yaml from the cache.
	misses := cache.misses
	write("app/cm.yaml", "two") // unseen: the copy does not change between successful builds
	f = newBuildFS(sec, cache, filepath.Join(root, "kustomization.yaml"), []byte("root"))
	if got := read(f, kfile); got != "on disk" {
		t.Fatalf("another build sees %q at the generated path", got)
	}
	if got := read(f, cm); got != "one" || cache.misses != misses+1 {
		t.Fatalf("cm.yaml %q, misses %d → %d: want it from the cache", got, misses, cache.misses)
	}
	refused(f, filepath.Join(root, "app", "link.yaml"))
	f.done(false) // failed: a repair may change the copy next

	// Build 3 (the repair's build): read from disk, recorded nowhere.
	write("app/cm.yaml", "repaired")
	f = newBuildFS(sec, cache, kfile, []byte("generated"))
	if got := read(f, cm); got != "repaired" {
		t.Fatalf("after a failed build cm.yaml is %q, want the disk's", got)
	}
	refused(f, filepath.Join(base, "outside.yaml"))
	f.done(true)

	// Build 4 (after the repair's restore): fresh, and cached again.
	write("app/cm.yaml", "restored")
	f = newBuildFS(sec, cache, kfile, []byte("generated"))
	if got := read(f, cm); got != "restored" {
		t.Fatalf("after the restore cm.yaml is %q", got)
	}
	f.done(true)
	write("app/cm.yaml", "changed behind the cache")
	f = newBuildFS(sec, cache, kfile, []byte("generated"))
	if got := read(f, cm); got != "restored" {
		t.Fatalf("cm.yaml %q: want the cached answer", got)
	}
	// reset (spec.ignore applied to the copy) forgets every answer.
	cache.reset()
	if got := read(f, cm); got != "changed behind the cache" {
		t.Fatalf("after reset cm.yaml is %q", got)
	}
}

// mentionsVar is the test Applied made with the YAML it writes: "${" in a
// key, a value, through an alias, or nowhere.
func TestMentionsVar(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     bool
	}{
		{"value", "a:\n  b: x-${Y}", true},
		{"key", "a: {'${K}': 1}", true},
		{"escaped", `a: "\x24{Y}"`, true},
		{"alias", "x: &v p${Y}\ny: *v", true},
		{"in a sequence", "a: [1, '${Y}']", true},
		{"none", "a:\n  b: $Y\n  c: '{x}'\n  d: $ {}\n  e: '$'\n  f: {}", false},
		{"dollar then brace apart", "a: $\nb: {}", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := yaml.Parse(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			got := mentionsVar(n.YNode(), map[*yaml.Node]bool{})
			s, _ := n.MarshalJSON()
			if y := strings.Contains(string(s), "${"); y != got || got != tc.want {
				t.Fatalf("mentionsVar %v, the JSON has ${: %v, want %v (%s)", got, y, tc.want, s)
			}
		})
	}
}
