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

// Options select what to render: the components' options (start from
// DefaultOptions; an empty Namespace, Registry, ClusterDomain or LogLevel,
// and nil Components, take `flux install`'s defaults) and the overlays.
type Options struct {
	// Options are the components' options; Bundle is the release's
	// manifests (bundles.Open returns an embedded one) and must be set.
	components.Options
	// Overlays is an overlay directory: a kustomization.yaml at its root
	// listing patches (or Flux's "customize Flux manifests" form, whose
	// resources name gotk-components.yaml), e.g. os.DirFS("overlays").
	Overlays fs.FS
	// Patches are inline patches (patch: with an optional target), as a
	// FluxInstance's spec.kustomize.patches; an alternative to Overlays.
	Patches []types.Patch
	// Phrases are the words the proofs use for the caller's controls
	// (patches.Phrases); the zero value says this package's options.
	Phrases patches.Phrases
}

// DefaultOptions are `flux install`'s defaults for a release and its
// bundle, except that no extra components are added.
func DefaultOptions(fluxVersion string, bundle fs.FS) Options {
	o := Options{Options: components.DefaultOptions(fluxVersion)}
	o.Bundle = bundle
	return o
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
	if o.Components == nil {
		o.Components = co.Components
	}
	orDefault(&o.Namespace, co.Namespace)
	orDefault(&o.Registry, co.Registry)
	orDefault(&o.ClusterDomain, co.ClusterDomain)
	orDefault(&o.LogLevel, co.LogLevel)

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
	run, err := Run(ctx, o.Options, ov, o.Phrases)
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
// (patches.Proofs), the proofs naming the caller's controls in words' (the
// zero patches.Phrases: the library's). A nil ov skips the overlays on
// purpose (`bootstrap render --plain`): the proofs then carry a warning,
// never a silent pass; an empty overlay (&patches.Overlay{Name: "(none)"})
// applies nothing without one.
func Run(ctx context.Context, co components.Options, ov *patches.Overlay, words patches.Phrases) (*Output, error) {
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
		Checks: words.Proofs(r.FluxVersion, r.Origin, res, plain)}, nil
}

// orDefault sets an empty *to to def.
func orDefault(to *string, def string) {
	if *to == "" {
		*to = def
	}
}

// Gate is a controller's feature gate as the render leaves it: its value,
// whether the args set it, the version's default (patches.Gate), and the
// version.
type Gate struct {
	patches.Gate
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
		return Gate{Gate: patches.EffectiveGate(controller, v, d.flags, gate), Version: v}, nil
	}
	return Gate{}, fmt.Errorf("%s is not among the rendered controllers %v", controller, r.Components)
}
