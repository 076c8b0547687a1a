package bundles

import (
	"errors"
	"io/fs"
	"slices"
	"testing"
	"testing/fstest"
)

func TestBuildWithoutGeneratedBundles(t *testing.T) {
	// What a fresh clone that skipped `make generate` embeds: the README only.
	fsys := fstest.MapFS{"flux/README.md": {Data: []byte("x")}}
	if _, err := versions(fsys); !errors.Is(err, ErrNotGenerated) {
		t.Fatalf("got %v, want ErrNotGenerated", err)
	}
}

func TestOpen(t *testing.T) {
	vs, err := Versions()
	if err != nil {
		t.Fatal(err) // `make generate` ran before the tests
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
