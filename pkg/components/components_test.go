package components

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/tar"

	"github.com/homelab-ops/bootstrap/pkg/components/bundles"
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

	embedded, err := Generate(context.Background(), DefaultOptions("v2.4.0"))
	if err != nil {
		t.Fatal(err)
	}
	tf, err := os.Open(tgz)
	if err != nil {
		t.Fatal(err)
	}
	defer tf.Close()
	fromTar, cleanup, err := ExtractBundle(tf, "tarball "+tgz)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	for name, b := range map[string]fs.FS{"a directory": os.DirFS(dir), "a tarball": fromTar} {
		o := DefaultOptions("v2.4.0")
		o.Bundle = b
		r, err := Generate(context.Background(), o)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(r.YAML, embedded.YAML) {
			t.Errorf("%s renders differently from the embedded bundle", name)
		}
	}
}

func TestNotABundle(t *testing.T) {
	// A valid tarball of the wrong thing.
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "README.md"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	var tgz bytes.Buffer
	if _, err := tar.Tar(src, &tgz); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		r       io.Reader
		missing bool
		want    string
	}{
		"a tarball of something else": {&tgz, true, "is not a Flux release bundle: missing rbac.yaml, policies.yaml, <component>.yaml"},
		"not a tarball":               {strings.NewReader("not gzip"), false, "not gzip: "},
	} {
		_, _, err := ExtractBundle(tc.r, "not gzip")
		var be *BundleError
		if !errors.As(err, &be) || (len(be.Missing) > 0) != tc.missing || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want a *BundleError saying %q", name, err, tc.want)
		}
	}
	// The same directory given as Options.Bundle.
	o := DefaultOptions("v2.9.5")
	o.Bundle = os.DirFS(src)
	var be *BundleError
	if _, err := Generate(context.Background(), o); !errors.As(err, &be) || len(be.Missing) != 3 {
		t.Errorf("Options.Bundle of a README: got %v, want a *BundleError missing three files", err)
	}
}

func TestOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*Options)
		field string
		value string
	}{
		{"a bad log level", func(o *Options) { o.LogLevel = "loud" }, "LogLevel", "loud"},
		{"a version not embedded", func(o *Options) { o.FluxVersion = "v2.1.0" }, "FluxVersion", "v2.1.0"},
		{"an unknown component", func(o *Options) { o.ComponentsExtra = []string{"nope-controller"} }, "Components", "nope-controller"},
		{"no component", func(o *Options) { o.Components = nil }, "Components", ""},
	} {
		o := DefaultOptions("v2.9.5")
		tc.edit(&o)
		for fn, err := range map[string]error{"Preflight": Preflight(o), "Generate": func() error { _, err := Generate(context.Background(), o); return err }()} {
			var oe *OptionError
			if !errors.As(err, &oe) || oe.Field != tc.field || oe.Value != tc.value || len(oe.Allowed) == 0 || !strings.Contains(err.Error(), "Options."+tc.field) {
				t.Errorf("%s: %s: got %v, want an *OptionError on %s=%q", tc.name, fn, err, tc.field, tc.value)
			}
		}
	}
	if err := Preflight(DefaultOptions("v2.9.5")); err != nil {
		t.Errorf("the defaults: %v", err)
	}
}

func TestExtrasAppended(t *testing.T) {
	o := DefaultOptions("v2.9.5")
	o.ComponentsExtra = []string{"image-reflector-controller", "image-automation-controller"}
	r, err := Generate(context.Background(), o)
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
	r, err := Generate(context.Background(), o)
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
	if err == nil || !strings.Contains(err.Error(), "give Options.Bundle") {
		t.Fatalf("got %v, want an error naming Options.Bundle", err)
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
