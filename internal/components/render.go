package components

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/kustomize/kyaml/openapi"

	"github.com/fluxcd/flux2/v2/pkg/manifestgen"
	"github.com/fluxcd/flux2/v2/pkg/manifestgen/install"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// Options mirror `flux install`'s flags.
type Options struct {
	FluxVersion string
	// Manifests is a directory or manifests.tar.gz; empty means embedded.
	Manifests          string
	Components         []string
	ComponentsExtra    []string
	Namespace          string
	Registry           string
	ImagePullSecret    string
	NetworkPolicy      bool
	WatchAllNamespaces bool
	ClusterDomain      string
	TolerationKeys     []string
	LogLevel           string
}

// DefaultOptions are `flux install`'s defaults, except that no extra
// components are added unless asked for.
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

// Rendered is the output of Render.
type Rendered struct {
	// YAML is the multi-document render, as `flux install --export` prints it.
	YAML []byte
	// Origin says which bundle was rendered.
	Origin      string
	FluxVersion string
	Components  []string
}

// Preflight checks, before anything is read or requested, what Render
// would refuse of o without reading a file: the log level and, for the
// embedded bundle (no --manifests), the version and the components.
func Preflight(o Options) error {
	if !slices.Contains(LogLevels, o.LogLevel) {
		return verify.InputErrorf("--log-level %q is not one of %s", o.LogLevel, strings.Join(LogLevels, ", "))
	}
	if o.Manifests != "" {
		return nil // the bundle is a file: read when the render runs
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
		return nil, verify.InputErrorf("--components: no components selected; available in %s: %s", b.Origin, strings.Join(b.Components, ", "))
	}
	var unknown []string
	for _, c := range components {
		if !slices.Contains(b.Components, c) {
			unknown = append(unknown, c)
		}
	}
	if len(unknown) > 0 {
		return nil, verify.InputErrorf("--components/--components-extra: unknown component %s; available in %s: %s",
			strings.Join(unknown, ", "), b.Origin, strings.Join(b.Components, ", "))
	}
	return components, nil
}

// Render generates the Flux components in-process. It never touches the
// network: manifestgen is given the bundle's files, so it only templates and
// builds them with kustomize.
func Render(ctx context.Context, o Options) (*Rendered, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !slices.Contains(LogLevels, o.LogLevel) {
		return nil, verify.InputErrorf("--log-level %q is not one of %s", o.LogLevel, strings.Join(LogLevels, ", "))
	}
	var (
		b   *Bundle
		err error
	)
	if o.Manifests != "" {
		var cleanup func()
		b, cleanup, err = LoadBundle(o.Manifests)
		defer cleanup()
	} else {
		b, err = EmbeddedBundle(o.FluxVersion)
	}
	if err != nil {
		return nil, err
	}
	return RenderBundle(ctx, b, o)
}

// RenderBundle is Render from the bundle b; o.Manifests is not read.
func RenderBundle(ctx context.Context, b *Bundle, o Options) (*Rendered, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !slices.Contains(LogLevels, o.LogLevel) {
		return nil, verify.InputErrorf("--log-level %q is not one of %s", o.LogLevel, strings.Join(LogLevels, ", "))
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

// prewarmSchema starts kustomize's parse of its built-in OpenAPI schema on
// another core. manifestgen's build needs it at its first strategic-merge
// patch and would parse it there (≈ 50 ms, once per process, under
// kustomize's own lock); begun now, it runs while the bundle is copied and
// templated. The parse is the same either way.
func prewarmSchema() { go openapi.Schema() }
