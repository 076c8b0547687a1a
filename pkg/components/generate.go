package components

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/kustomize/kyaml/openapi"

	"github.com/fluxcd/flux2/v2/pkg/manifestgen"
	"github.com/fluxcd/flux2/v2/pkg/manifestgen/install"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// Options select what Generate renders. They mirror `flux install`'s flags;
// start from DefaultOptions.
type Options struct {
	// FluxVersion is the Flux release, e.g. "v2.4.0"; manifestgen templates
	// it into the render, so it must be the bundle's release.
	FluxVersion string
	// Bundle is the release's manifests: <component>.yaml for each
	// controller, rbac.yaml and policies.yaml at its root. A *Bundle keeps
	// its Origin; nil means the embedded release FluxVersion names
	// (EmbeddedBundle).
	Bundle fs.FS
	// Components are the controllers to install.
	Components []string
	// ComponentsExtra are added to them, e.g. image-reflector-controller.
	ComponentsExtra []string
	// Namespace is the namespace Flux is installed in.
	Namespace string
	// Registry is the container registry the controller images come from.
	Registry string
	// ImagePullSecret names the Secret the controllers pull images with.
	ImagePullSecret string
	// NetworkPolicy denies ingress to the namespace from other namespaces.
	NetworkPolicy bool
	// WatchAllNamespaces makes the controllers watch every namespace.
	WatchAllNamespaces bool
	// ClusterDomain is the cluster's DNS domain.
	ClusterDomain string
	// TolerationKeys are taint keys the controllers tolerate.
	TolerationKeys []string
	// LogLevel is the controllers' log level, one of LogLevels.
	LogLevel string
}

// DefaultOptions are `flux install`'s defaults for the embedded release
// fluxVersion, except that no extra components are added unless asked for.
func DefaultOptions(fluxVersion string) Options {
	d := install.MakeDefaultOptions()
	return Options{
		FluxVersion:        fluxVersion,
		Components:         slices.Clone(d.Components),
		Namespace:          d.Namespace,
		Registry:           d.Registry,
		NetworkPolicy:      d.NetworkPolicy,
		WatchAllNamespaces: d.WatchAllNamespaces,
		ClusterDomain:      d.ClusterDomain,
		LogLevel:           d.LogLevel,
	}
}

// LogLevels are the values the controllers accept for --log-level.
var LogLevels = []string{"debug", "info", "error"}

// Rendered is the output of Generate.
type Rendered struct {
	// YAML is the multi-document render, as `flux install --export` prints it.
	YAML []byte
	// Origin says which bundle was rendered.
	Origin string
	// FluxVersion is Options.FluxVersion.
	FluxVersion string
	// Components are the controllers rendered, Components then
	// ComponentsExtra, each once.
	Components []string
}

// CheckLogLevel refuses a LogLevel the controllers do not accept (an
// *OptionError).
func CheckLogLevel(level string) error {
	if !slices.Contains(LogLevels, level) {
		return &OptionError{Field: "LogLevel", Value: level, Allowed: LogLevels}
	}
	return nil
}

// Preflight checks, before anything is read or requested, what Generate
// would refuse of o without reading a file: the log level and, with Bundle
// nil (the embedded release), the version and the components.
func Preflight(o Options) error {
	if err := CheckLogLevel(o.LogLevel); err != nil {
		return err
	}
	if o.Bundle != nil {
		return nil // read when the render runs
	}
	b, err := EmbeddedBundle(o.FluxVersion)
	if err != nil {
		return err
	}
	_, err = selected(b, o)
	return err
}

// selected are the components to render: Components then ComponentsExtra
// (manifestgen never renders ComponentsExtra on its own), a component named
// twice once, each one the bundle has.
func selected(b *Bundle, o Options) ([]string, error) {
	var components []string
	for _, c := range slices.Concat(o.Components, o.ComponentsExtra) {
		if !slices.Contains(components, c) {
			components = append(components, c)
		}
	}
	if len(components) == 0 {
		return nil, &OptionError{Field: "Components", Allowed: b.Components, Origin: b.Origin}
	}
	var unknown []string
	for _, c := range components {
		if !slices.Contains(b.Components, c) {
			unknown = append(unknown, c)
		}
	}
	if len(unknown) > 0 {
		return nil, &OptionError{Field: "Components", Value: strings.Join(unknown, ", "), Allowed: b.Components, Origin: b.Origin}
	}
	return components, nil
}

// Generate renders the Flux components of o.Bundle in-process. It never
// touches the network: manifestgen is given the bundle's files, so it only
// templates and builds them with kustomize.
func Generate(ctx context.Context, o Options) (*Rendered, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := CheckLogLevel(o.LogLevel); err != nil {
		return nil, err
	}
	b, err := bundleOf(o)
	if err != nil {
		return nil, err
	}
	components, err := selected(b, o)
	if err != nil {
		return nil, err
	}

	prewarmSchema()
	// manifestgen templates into the base directory, so give it a fresh copy.
	base, err := manifestgen.MkdirTempAbs("", "bootstrap-render-")
	if err != nil {
		return nil, fmt.Errorf("render: temp dir: %w", err)
	}
	defer os.RemoveAll(base)
	if err := b.copyTo(base); err != nil {
		if verify.IsInput(err) {
			return nil, err
		}
		return nil, fmt.Errorf("render: copy %s: %w", b.Origin, err)
	}

	opts := install.MakeDefaultOptions()
	opts.Version = o.FluxVersion
	opts.Namespace = o.Namespace
	opts.Components = components
	opts.ComponentsExtra = nil
	opts.Registry = o.Registry
	opts.ImagePullSecret = o.ImagePullSecret
	opts.NetworkPolicy = o.NetworkPolicy
	opts.WatchAllNamespaces = o.WatchAllNamespaces
	opts.ClusterDomain = o.ClusterDomain
	opts.TolerationKeys = o.TolerationKeys
	opts.LogLevel = o.LogLevel
	opts.Timeout = time.Minute
	// An http(s) BaseURL plus a non-empty base makes manifestgen template the
	// local files instead of downloading.
	m, err := install.Generate(opts, base)
	if err != nil {
		return nil, fmt.Errorf("render Flux %s from %s: %w", o.FluxVersion, b.Origin, err)
	}
	return &Rendered{YAML: []byte(m.Content), Origin: b.Origin, FluxVersion: o.FluxVersion, Components: components}, nil
}

// bundleOf is o's bundle: o.Bundle (as it is when a *Bundle), else the
// embedded release o.FluxVersion.
func bundleOf(o Options) (*Bundle, error) {
	switch b := o.Bundle.(type) {
	case nil:
		return EmbeddedBundle(o.FluxVersion)
	case *Bundle:
		return b, nil
	default:
		return NewBundle(b, "Flux "+o.FluxVersion+" release bundle")
	}
}

// prewarmSchema starts kustomize's parse of its built-in OpenAPI schema on
// another core. manifestgen's build needs it at its first strategic-merge
// patch and would parse it there (≈ 50 ms, once per process, under
// kustomize's own lock); begun now, it runs while the bundle is copied and
// templated. The parse is the same either way.
func prewarmSchema() { go openapi.Schema() }
