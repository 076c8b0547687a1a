package components

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/tar"

	"github.com/homelab-ops/bootstrap/pkg/components/bundles"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// writeBundleDir copies an embedded bundle to a directory, as a user's
// extracted manifests.tar.gz would look.
func writeBundleDir(t *testing.T, version string) string {
	t.Helper()
	b, err := EmbeddedBundle(version)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := b.copyTo(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestManifestsDirAndTarball(t *testing.T) {
	dir := writeBundleDir(t, "v2.4.0")
	tgz := filepath.Join(t.TempDir(), "manifests.tar.gz")
	f, err := os.Create(tgz)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tar.Tar(dir, f); err != nil {
		t.Fatal(err)
	}
	f.Close()

	embedded, err := Render(context.Background(), DefaultOptions("v2.4.0"))
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{dir, tgz} {
		o := DefaultOptions("v2.4.0")
		o.Manifests = src
		r, err := Render(context.Background(), o)
		if err != nil {
			t.Fatalf("--manifests %s: %v", src, err)
		}
		if !bytes.Equal(r.YAML, embedded.YAML) {
			t.Errorf("--manifests %s renders differently from the embedded bundle", src)
		}
	}
}

func TestManifestsNotABundle(t *testing.T) {
	// A valid tarball of the wrong thing.
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "README.md"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	tgz := filepath.Join(t.TempDir(), "other.tar.gz")
	f, _ := os.Create(tgz)
	if _, err := tar.Tar(src, f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	notTar := filepath.Join(t.TempDir(), "manifests.tar.gz")
	if err := os.WriteFile(notTar, []byte("not gzip"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := map[string]string{
		tgz:                        "is not a Flux release bundle: missing rbac.yaml, policies.yaml, <component>.yaml",
		notTar:                     "neither a directory nor a readable manifests.tar.gz",
		filepath.Join(src, "nope"): "no such file",
	}
	for p, want := range tests {
		o := DefaultOptions("v2.9.5")
		o.Manifests = p
		_, err := Render(context.Background(), o)
		if err == nil || !verify.IsInput(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("--manifests %s: got %v, want an input error saying %q", p, err, want)
		}
	}
}

func TestExtrasAppended(t *testing.T) {
	o := DefaultOptions("v2.9.5")
	o.ComponentsExtra = []string{"image-reflector-controller", "image-automation-controller"}
	r, err := Render(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"image-reflector-controller:v1.2.5", "image-automation-controller:v1.2.5", "namespace: flux-system"} {
		if !bytes.Contains(r.YAML, []byte(want)) {
			t.Errorf("render lacks %q", want)
		}
	}
}

func TestOptionsReachTheRender(t *testing.T) {
	o := DefaultOptions("v2.9.5")
	o.Namespace = "gitops"
	o.Registry = "registry.local/fluxcd"
	o.ImagePullSecret = "regcred"
	o.LogLevel = "debug"
	o.TolerationKeys = []string{"node-role.kubernetes.io/control-plane"}
	o.WatchAllNamespaces = false
	o.NetworkPolicy = false
	r, err := Render(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	y := string(r.YAML)
	for _, want := range []string{"namespace: gitops", "image: registry.local/fluxcd/kustomize-controller:v1.9.5", "name: regcred", "--log-level=debug", "key: node-role.kubernetes.io/control-plane", "--watch-all-namespaces=false"} {
		if !strings.Contains(y, want) {
			t.Errorf("render lacks %q", want)
		}
	}
	if strings.Contains(y, "kind: NetworkPolicy") {
		t.Error("--network-policy=false still renders NetworkPolicies")
	}
}

func TestBuildWithoutGeneratedBundles(t *testing.T) {
	// What a fresh clone that skipped `make generate` embeds: the README
	// only, which pkg/components/bundles reports as ErrNotGenerated
	// (bundles_test.go).
	_, err := embeddedVersions(nil, bundles.ErrNotGenerated)
	if err == nil || !strings.Contains(err.Error(), "run `make generate`") {
		t.Fatalf("got %v, want an error telling to run make generate", err)
	}
	// A caller can still tell this case from any other failure.
	if !errors.Is(err, bundles.ErrNotGenerated) {
		t.Fatalf("errors.Is(%v, bundles.ErrNotGenerated) = false, want true", err)
	}
	// Any other error passes through as it is.
	other := errors.New("disk on fire")
	if _, err := embeddedVersions(nil, other); err != other || errors.Is(err, bundles.ErrNotGenerated) {
		t.Fatalf("got %v, want the error unchanged", err)
	}
}
