package components

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/fluxcd/pkg/tar"
	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/homelab-ops/bootstrap/pkg/components/bundles"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// bundleShared are the files of a release bundle that are not components.
var bundleShared = []string{"rbac.yaml", "policies.yaml"}

// Bundle is a Flux release bundle: <component>.yaml for each controller plus
// rbac.yaml and policies.yaml, the contents of a release's manifests.tar.gz.
type Bundle struct {
	fsys fs.FS
	// Origin says where the bundle came from, for evidence.
	Origin string
	// Components are the controllers the bundle can install, sorted.
	Components []string
}

// EmbeddedBundle returns the bundle of an embedded Flux version. A version
// not embedded is an *OptionError on FluxVersion listing the embedded ones.
func EmbeddedBundle(version string) (*Bundle, error) {
	available, err := EmbeddedVersions()
	if err != nil {
		return nil, err
	}
	if !slices.Contains(available, version) {
		return nil, &OptionError{Field: "FluxVersion", Value: version, Allowed: available}
	}
	sub, err := bundles.Open(version)
	if err != nil {
		return nil, err
	}
	return newBundle(sub, "embedded Flux "+version+" release bundle")
}

// EmbeddedVersions lists the Flux versions whose bundles are embedded
// (pkg/components/bundles), in semver order. A build without them errs with
// bundles.ErrNotGenerated (errors.Is finds it).
func EmbeddedVersions() ([]string, error) { return embeddedVersions(bundles.Versions()) }

func embeddedVersions(versions []string, err error) ([]string, error) {
	if errors.Is(err, bundles.ErrNotGenerated) {
		// %w keeps errors.Is(err, bundles.ErrNotGenerated) true for callers.
		return nil, fmt.Errorf("no embedded Flux release bundles; give Options.Bundle: %w", err)
	}
	return versions, err
}

// NewBundle is the bundle whose files are at the root of fsys (the
// contents of a Flux release's manifests.tar.gz); origin says where it came
// from, for messages and evidence. An fs.FS with a Check(name) error method
// (a directory that vets each file before it is read) has every file vetted
// before any is read. A directory that is not a bundle is a *BundleError.
func NewBundle(fsys fs.FS, origin string) (*Bundle, error) { return newBundle(fsys, origin) }

// MaxTarballSize bounds what ExtractBundle unpacks.
const MaxTarballSize = 64 << 20

// ExtractBundle unpacks a Flux release's manifests.tar.gz read from r into a
// temporary directory and returns its bundle; cleanup removes the
// directory. It unpacks at most MaxTarballSize bytes. A stream that is not a
// tarball, or a tarball that is not a bundle, is a *BundleError.
func ExtractBundle(r io.Reader, origin string) (*Bundle, func(), error) {
	noop := func() {}
	dir, err := os.MkdirTemp("", "bootstrap-manifests-")
	if err != nil {
		return nil, noop, fmt.Errorf("extract %s: %w", origin, err)
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	if err := tar.Untar(r, dir, tar.WithMaxUntarSize(MaxTarballSize)); err != nil {
		cleanup()
		return nil, noop, &BundleError{Origin: origin, Err: err}
	}
	// os.Root keeps every read inside the extraction.
	root, err := os.OpenRoot(dir)
	if err != nil {
		cleanup()
		return nil, noop, fmt.Errorf("extract %s: %w", origin, err)
	}
	b, err := newBundle(root.FS(), origin)
	if err != nil {
		_ = root.Close()
		cleanup()
		return nil, noop, err
	}
	return b, func() { _ = root.Close(); cleanup() }, nil
}

// Open implements fs.FS: a Bundle is a valid Options.Bundle, and keeps its
// Origin in what Generate reports.
func (b *Bundle) Open(name string) (fs.File, error) { return b.fsys.Open(name) }

func newBundle(fsys fs.FS, origin string) (*Bundle, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", origin, err)
	}
	b := &Bundle{fsys: fsys, Origin: origin}
	have := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".yaml") {
			continue
		}
		// A file the input rule refuses (a device, a symlink out of the
		// directory, too large) stops the load before any is read.
		if c, ok := fsys.(interface{ Check(string) error }); ok {
			if err := c.Check(name); err != nil {
				return nil, err
			}
		}
		have[name] = true
		if !slices.Contains(bundleShared, name) {
			b.Components = append(b.Components, strings.TrimSuffix(name, ".yaml"))
		}
	}
	var missing []string
	for _, s := range bundleShared {
		if !have[s] {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 || len(b.Components) == 0 {
		if len(b.Components) == 0 {
			missing = append(missing, "<component>.yaml")
		}
		return nil, &BundleError{Origin: origin, Missing: missing}
	}
	slices.Sort(b.Components)
	return b, nil
}

// copyTo writes the bundle's files into dir, a fresh directory that
// manifestgen may template into.
func (b *Bundle) copyTo(dir string) error {
	entries, err := fs.ReadDir(b.fsys, ".")
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		data, err := fs.ReadFile(b.fsys, e.Name())
		if err != nil {
			if verify.IsInput(err) {
				return err
			}
			return fmt.Errorf("read %s from %s: %w", e.Name(), b.Origin, err)
		}
		if err := os.WriteFile(path.Join(dir, e.Name()), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// CRDs are the CustomResourceDefinitions of the bundle's components, in
// file order.
func (b *Bundle) CRDs() ([]apiextensionsv1.CustomResourceDefinition, error) {
	var out []apiextensionsv1.CustomResourceDefinition
	for _, c := range b.Components {
		data, err := fs.ReadFile(b.fsys, c+".yaml")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", b.Origin, err)
		}
		d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var crd apiextensionsv1.CustomResourceDefinition
			if err := d.Decode(&crd); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return nil, fmt.Errorf("%s %s.yaml: %w", b.Origin, c, err)
			}
			if crd.Kind == "CustomResourceDefinition" {
				out = append(out, crd)
			}
		}
	}
	return out, nil
}

// Deployment is the Deployment of a component of the bundle as released
// (before manifestgen templates it), e.g. to read the controller version
// from its image without rendering.
func (b *Bundle) Deployment(component string) (*appsv1.Deployment, error) {
	data, err := fs.ReadFile(b.fsys, component+".yaml")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Origin, err)
	}
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var dep appsv1.Deployment
		if err := d.Decode(&dep); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("%s %s.yaml: %w", b.Origin, component, err)
		}
		if dep.Kind == "Deployment" {
			return &dep, nil
		}
	}
	return nil, fmt.Errorf("%s %s.yaml: no Deployment", b.Origin, component)
}
