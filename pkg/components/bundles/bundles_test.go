package bundles

import (
	"errors"
	"io/fs"
	"slices"
	"testing"
	"testing/fstest"

	"golang.org/x/mod/semver"
)

func TestBuildWithoutGeneratedBundles(t *testing.T) {
	// What a tree whose committed releases were deleted embeds: the README only.
	fsys := fstest.MapFS{"flux/README.md": {Data: []byte("x")}}
	if _, err := versions(fsys); !errors.Is(err, ErrNotGenerated) {
		t.Fatalf("got %v, want ErrNotGenerated", err)
	}
}

func TestOpen(t *testing.T) {
	vs, err := Versions()
	if err != nil {
		t.Fatal(err) // the bundles are committed: a checkout has them
	}
	if !slices.Contains(vs, "v2.4.0") {
		t.Fatalf("v2.4.0 not embedded: %v", vs)
	}
	b, err := Open("v2.4.0")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"kustomize-controller.yaml", "rbac.yaml", "policies.yaml"} {
		if _, err := fs.Stat(b, f); err != nil {
			t.Errorf("bundle v2.4.0: %v", err)
		}
	}
	if _, err := Open("v2.1.0"); err == nil {
		t.Error("Open(v2.1.0) succeeded; it is not embedded")
	}
}

// TestVersionsSemverOrder: releases are listed in semver order, not the
// directory's lexical order (where v2.10.0 sorts before v2.2.3), and a
// directory that is not named as a release is no bundle.
func TestVersionsSemverOrder(t *testing.T) {
	fsys := fstest.MapFS{
		"flux/README.md":            {Data: []byte("x")},
		"flux/v2.10.0/rbac.yaml":    {Data: []byte("x")},
		"flux/v2.2.3/rbac.yaml":     {Data: []byte("x")},
		"flux/v2.9.5/rbac.yaml":     {Data: []byte("x")},
		"flux/v3.0.0/rbac.yaml":     {Data: []byte("x")},
		"flux/v2.10.1/rbac.yaml":    {Data: []byte("x")},
		"flux/not-a-release/x.yaml": {Data: []byte("x")},
	}
	got, err := versions(fsys)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"v2.2.3", "v2.9.5", "v2.10.0", "v2.10.1", "v3.0.0"}
	if !slices.Equal(got, want) {
		t.Fatalf("versions = %v, want %v", got, want)
	}
}

// TestVersionsEmbeddedSorted: the embedded list is in semver order.
func TestVersionsEmbeddedSorted(t *testing.T) {
	vs, err := Versions()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.IsSortedFunc(vs, semver.Compare) {
		t.Fatalf("embedded versions not in semver order: %v", vs)
	}
}
