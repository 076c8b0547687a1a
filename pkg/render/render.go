// Package render renders the Flux components of a pinned release in-process,
// applies controller overlays to them, and proves the overlays landed.
//
// The render is flux2's manifestgen over a release bundle (the files of a
// Flux release's manifests.tar.gz), as `flux install --export` does, without
// network access. The overlays are kustomize patches applied one at a time
// with the kustomize api, so each patch's effect is attributed to it. The
// proofs are pkg/verify checks: the components rendered, every patch changed
// something, no generated container arg was lost, kustomize-controller fails
// on an undefined ${VAR} (StrictPostBuildSubstitutions), and every feature
// gate set is one its controller's version supports.
//
// A program brings its own bundle as an fs.FS, or imports
// pkg/components/bundles for the releases this module embeds:
//
//	b, _ := bundles.Open("v2.4.0")
//	res, err := render.Render(ctx, render.DefaultOptions("v2.4.0", b))
//
// Render is a convenience over the three packages it joins:
// pkg/components generates, pkg/patches applies and proves the overlays,
// pkg/verify holds the proofs. Run is that sequence itself, and the only
// copy of it: the bootstrap CLI's step 1 (`bootstrap render`, and every
// command that installs the controllers) runs it too.
package render

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"slices"

	ssautils "github.com/fluxcd/pkg/ssa/utils"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/types"

	"github.com/homelab-ops/bootstrap/pkg/components"
	"github.com/homelab-ops/bootstrap/pkg/patches"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// Options select what to render. They mirror `flux install`'s flags; start
// from DefaultOptions. An empty Namespace, Registry, ClusterDomain or
// LogLevel, and nil Components, take `flux install`'s defaults.
type Options struct {
	// FluxVersion is the Flux release, e.g. "v2.4.0"; manifestgen templates
	// it into the render, so it must be the bundle's release.
	FluxVersion string
	// Bundle is the release's manifests: <component>.yaml for each
	// controller, rbac.yaml and policies.yaml at its root.
	// bundles.Open returns an embedded one.
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
	// LogLevel is the controllers' log level: debug, info or error.
	LogLevel string
	// Overlays is an overlay directory: a kustomization.yaml at its root
	// listing patches (or Flux's "customize Flux manifests" form, whose
	// resources name gotk-components.yaml), e.g. os.DirFS("overlays").
	Overlays fs.FS
	// Patches are inline patches (patch: with an optional target), as a
	// FluxInstance's spec.kustomize.patches; an alternative to Overlays.
	Patches []types.Patch
}

// DefaultOptions are `flux install`'s defaults for a release and its
// bundle, except that no extra components are added.
func DefaultOptions(fluxVersion string, bundle fs.FS) Options {
	d := components.DefaultOptions(fluxVersion)
	return Options{
		FluxVersion:        fluxVersion,
		Bundle:             bundle,
		Components:         d.Components,
		Namespace:          d.Namespace,
		Registry:           d.Registry,
		NetworkPolicy:      d.NetworkPolicy,
		WatchAllNamespaces: d.WatchAllNamespaces,
		ClusterDomain:      d.ClusterDomain,
		LogLevel:           d.LogLevel,
	}
}

// Result is a render and its proofs.
type Result struct {
	// YAML is the multi-document render with the overlays applied.
	YAML []byte
	// Objects are the objects of YAML, in order.
	Objects []*unstructured.Unstructured
	// Components are the controllers rendered.
	Components []string
	// Checks are the proofs. A check whose Verdict is verify.Fail means the
	// render must not be applied; verify.Report.ExitCode sums them up.
	Checks []verify.Check

	final []deployment
}

// deployment is a rendered controller's manager container, after the
// overlays.
type deployment struct {
	name, image string
	flags       patches.Flags
	err         error
}

// Render renders the components of o.Bundle, applies o's overlays and
// proves them. An error is bad input (a bundle, option or overlay the render
// refuses: *components.OptionError, *components.BundleError, or a
// verify.InputError naming the overlay's file) or a failed render; a patch
// that does not land is a failed check in the Result, not an error.
func Render(ctx context.Context, o Options) (*Result, error) {
	switch {
	case o.FluxVersion == "":
		return nil, &components.OptionError{Field: "FluxVersion", Reason: "is empty: name the bundle's Flux release, e.g. v2.4.0"}
	case o.Bundle == nil:
		return nil, &components.OptionError{Field: "Bundle", Reason: "is nil: pass a release bundle (bundles.Open gives an embedded one)"}
	case o.Overlays != nil && len(o.Patches) > 0:
		return nil, &components.OptionError{Field: "Overlays", Reason: "and Options.Patches are both set: pass one of them"}
	}
	co := components.DefaultOptions(o.FluxVersion)
	co.Bundle = o.Bundle
	co.ComponentsExtra = o.ComponentsExtra
	co.ImagePullSecret, co.NetworkPolicy, co.WatchAllNamespaces = o.ImagePullSecret, o.NetworkPolicy, o.WatchAllNamespaces
	co.TolerationKeys = o.TolerationKeys
	if o.Components != nil {
		co.Components = o.Components
	}
	orDefault(&co.Namespace, o.Namespace)
	orDefault(&co.Registry, o.Registry)
	orDefault(&co.ClusterDomain, o.ClusterDomain)
	orDefault(&co.LogLevel, o.LogLevel)

	ov := &patches.Overlay{Name: "(none)"}
	var err error
	switch {
	case o.Overlays != nil:
		ov, err = patches.LoadOverlay(o.Overlays, "overlays")
	case len(o.Patches) > 0:
		ov, err = patches.InlineOverlay(o.Patches, "Options.Patches")
	}
	if err != nil {
		return nil, err
	}
	run, err := Run(ctx, co, ov)
	if err != nil {
		return nil, err
	}
	objs, err := ssautils.ReadObjects(bytes.NewReader(run.YAML))
	if err != nil {
		return nil, fmt.Errorf("parse the render: %w", err)
	}
	out := &Result{YAML: run.YAML, Objects: objs, Components: slices.Clone(run.Components.Components), Checks: run.Checks}
	for i := range run.Overlay.Final {
		d := &run.Overlay.Final[i]
		f, err := patches.ManagerFlags(d)
		out.final = append(out.final, deployment{name: d.Name, image: patches.ManagerImage(d), flags: f, err: err})
	}
	return out, nil
}

// Output is what Run returns: the render, the overlays' effect and the
// proofs.
type Output struct {
	// YAML is the render with the overlays applied.
	YAML []byte
	// Components is the render before the overlays, with the bundle it
	// came from and the controllers rendered.
	Components *components.Rendered
	// Overlay holds each patch's effect and the Deployments before and
	// after the overlays.
	Overlay *patches.Result
	// Checks are the proofs (patches.Proofs).
	Checks []verify.Check
}

// Run is the render sequence: generate the components of co
// (components.Generate), apply the overlay ov (patches.Apply) and prove it
// (patches.Proofs). A nil ov skips the overlays on purpose (`bootstrap
// render --plain`): the proofs then carry a warning, never a silent pass;
// an empty overlay (&patches.Overlay{Name: "(none)"}) applies nothing
// without one.
func Run(ctx context.Context, co components.Options, ov *patches.Overlay) (*Output, error) {
	r, err := components.Generate(ctx, co)
	if err != nil {
		return nil, err
	}
	plain := ov == nil
	if plain {
		ov = &patches.Overlay{Name: "(none)"}
	}
	res, err := patches.Apply(r.YAML, ov)
	if err != nil {
		return nil, fmt.Errorf("apply overlays %s: %w", ov.Name, err)
	}
	return &Output{YAML: res.YAML, Components: r, Overlay: res,
		Checks: patches.Proofs(r.FluxVersion, r.Origin, res, plain)}, nil
}

func orDefault(to *string, v string) {
	if v != "" {
		*to = v
	}
}

// Gate is a controller's feature gate as the render leaves it.
type Gate struct {
	// Value is the gate's effective value: set by the args, else the
	// controller version's default.
	Value bool
	// Explicit is true when the controller's args set the gate.
	Explicit bool
	// Default is the controller version's default.
	Default bool
	// DefaultKnown is false when the image carries no version tag or no
	// default is recorded.
	DefaultKnown bool
	// Unsupported is true when the version's gates are recorded and lack
	// this one: the controller would exit at start-up were it set.
	Unsupported bool
	// Version is the controller's version, from its image tag ("" when
	// untagged).
	Version string
}

// EffectiveGate is the feature gate gate of the rendered controller (its
// Deployment's name, e.g. "kustomize-controller") after the overlays: the
// last --feature-gates arg that sets it, else the default of the
// controller's version in the gate tables read from each controller's
// internal/features. It errs when the controller is not rendered or its
// --feature-gates args do not parse.
func (r *Result) EffectiveGate(controller, gate string) (Gate, error) {
	for _, d := range r.final {
		if d.name != controller {
			continue
		}
		if d.err != nil {
			return Gate{}, fmt.Errorf("%s: %w", controller, d.err)
		}
		v := patches.ImageVersion(d.image)
		g := patches.EffectiveGate(controller, v, d.flags, gate)
		return Gate{Value: g.Value, Explicit: g.Explicit, Default: g.Default, DefaultKnown: g.DefaultKnown, Unsupported: g.Unsupported, Version: v}, nil
	}
	return Gate{}, fmt.Errorf("%s is not among the rendered controllers %v", controller, r.Components)
}
