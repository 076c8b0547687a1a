package fluxrepo

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The copy links the repository's files (copyRepoFiles): what a load
// writes into its copy — a kustomization with a remote entry left out
// offline (Holes), a repair leaving out a missing entry and restoring it —
// replaces the copy's file and never writes through to the repository's.
func TestLinkedCopyLeavesRepositoryAlone(t *testing.T) {
	t.Parallel()
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
