package fluxrepo

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writingLayout is the Taskfile layout with a kustomization whose load
// writes into the copy: a remote entry left out offline (Holes) and a
// missing file left out by a repair.
func writingLayout(t *testing.T) string {
	t.Helper()
	repo := t.TempDir()
	if err := os.CopyFS(repo, os.DirFS("../../testdata/layouts/taskfile")); err != nil {
		t.Fatal(err)
	}
	kfile := filepath.Join(repo, "kubernetes/apps/default/echo/app/kustomization.yaml")
	b, err := os.ReadFile(kfile)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(b), "resources:\n", "resources:\n  - https://git.example.invalid/remote/base?ref=v1\n  - ./missing.yaml\n", 1)
	if edited == string(b) {
		t.Fatal("no resources: in the fixture")
	}
	if err := os.WriteFile(kfile, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	return repo
}

// The copy links the repository's files (copyRepoFiles): what a load
// writes into its copy — a kustomization with a remote entry left out
// offline (Holes), a repair leaving out a missing entry and restoring it —
// replaces the copy's file and never writes through to the repository's.
func TestLinkedCopyLeavesRepositoryAlone(t *testing.T) {
	t.Parallel()
	repo := writingLayout(t)
	before := map[string]string{}
	walk := func(f func(rel string, b []byte, fi fs.FileInfo)) {
		t.Helper()
		err := filepath.WalkDir(repo, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(repo, p)
			f(rel, b, fi)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	walk(func(rel string, b []byte, _ fs.FileInfo) { before[rel] = string(b) })
	e, err := Load(Options{Repo: repo, Path: "kubernetes/flux", RootName: "cluster", KeepGoing: true, Holes: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Holes) == 0 {
		t.Fatalf("no hole left out: the test no longer writes into the copy")
	}
	n := 0
	walk(func(rel string, b []byte, fi fs.FileInfo) {
		n++
		if before[rel] != string(b) {
			t.Errorf("%s changed by the load:\n%s", rel, b)
		}
		if nlink(fi) > 1 {
			t.Errorf("%s: %d links after the load", rel, nlink(fi))
		}
	})
	if n != len(before) {
		t.Errorf("%d files after the load, %d before", n, len(before))
	}
}

// A copy kept between loads (Options.Copies) is given back as it was
// made, whatever the load changed in it (a kustomization with a remote
// entry left out, a repair, the files the root GitRepository's
// spec.ignore removed): each load sharing it loads what a load of its own
// copy loads.
func TestCopiesKeptLoadAsFresh(t *testing.T) {
	t.Parallel()
	repo := writingLayout(t)
	o := Options{Repo: repo, Path: "kubernetes/flux", RootName: "cluster", KeepGoing: true, Holes: true}
	summary := func(e *Env) string {
		var s strings.Builder
		for _, k := range e.Kustomizations {
			fmt.Fprintf(&s, "%s at %v built=%v files=%v repaired=%v note=%q\n", k.Ref(), k.Location, k.Built, k.Files, k.Repaired, k.Note)
			for _, r := range k.Resources {
				y, _ := r.AsYAML()
				s.Write(y)
			}
		}
		for _, h := range e.Holes {
			fmt.Fprintln(&s, h.String())
		}
		fmt.Fprintln(&s, e.Notes, e.RootFiles)
		return s.String()
	}
	fresh, err := Load(o)
	if err != nil {
		t.Fatal(err)
	}
	want := summary(fresh)
	if len(fresh.Holes) < 2 || !slices.Contains(fresh.Notes, "the root's GitRepository spec.ignore was applied to the copy") {
		t.Fatalf("the load no longer changes its copy (holes %v, notes %v)", fresh.Holes, fresh.Notes)
	}
	copies := NewCopies()
	t.Cleanup(func() { _ = copies.Close() })
	o.Copies = copies
	for i := range 3 {
		e, err := Load(o)
		if err != nil {
			t.Fatal(err)
		}
		if got := summary(e); got != want {
			t.Fatalf("load %d of the copy kept:\n%s\nwant (a copy of its own):\n%s", i, got, want)
		}
	}
	if n := len(copies.free); n != 1 || len(copies.free[copyKey{mustReal(t, repo), o.withDefaults().MaxFileBytes}]) != 1 {
		t.Fatalf("copies kept: %v", copies.free)
	}
	base := copies.base
	if err := copies.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(base); !os.IsNotExist(err) {
		t.Fatalf("%s left after Close: %v", base, err)
	}
}

func mustReal(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
