// Package customize decides which customization the Flux controllers get —
// the overlays this tool ships, an --overlays directory, none (--plain), the
// customization the environment's repository keeps, or a FluxInstance's
// spec.kustomize.patches — and renders them with it through pkg/render.Run
// (generate, apply, prove), as the CLI's render phase. The library's typed
// refusals (components.OptionError, components.BundleError,
// bundles.ErrNotGenerated) come back as they are: cmd/bootstrap says them
// with its flags.
package customize

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"

	bootstrap "github.com/homelab-ops/bootstrap"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/internal/safeio"
	"github.com/homelab-ops/bootstrap/pkg/components"
	"github.com/homelab-ops/bootstrap/pkg/patches"
	"github.com/homelab-ops/bootstrap/pkg/render"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// Options select what to render.
type Options struct {
	// Components are the render's options; Components.Bundle is set from
	// Manifests when the render runs.
	Components components.Options
	// Manifests is a directory or manifests.tar.gz (--manifests) to render
	// from instead of the embedded release; empty means embedded.
	Manifests string
	// Overlays is the controllers' customization, read when the render
	// runs; the zero value is the overlays this tool ships.
	Overlays Source
	// Phrases are the words the proofs use for the controls (the command
	// line's flags; patches.Phrases).
	Phrases patches.Phrases
}

// Source is where the controllers' customization comes from. Which flags
// chose it, and their conflicts, are the command's business; the kinds
// only say what the render applies and what UseRepository must refuse.
type Source struct {
	Kind SourceKind
	// FS is the overlay directory (SourceBuiltin: nil for the shipped one;
	// SourceDir; SourceRepository).
	FS fs.FS
	// Name names the customization in messages: the directory as given,
	// the repository's directory, or the FluxInstance's field.
	Name string
	// Inline is the customization a FluxInstance declares (its
	// spec.kustomize.patches; SourceInstance).
	Inline *patches.Overlay
}

// SourceKind says what kind of customization a Source is.
type SourceKind int

// The kinds of customization.
const (
	// SourceBuiltin is the overlays this tool ships (overlays/).
	SourceBuiltin SourceKind = iota
	// SourceDir is an overlay directory the user chose instead (--overlays).
	SourceDir
	// SourceNone skips the overlays on purpose (--plain): a warning in
	// every report.
	SourceNone
	// SourceRepository is the customization the environment's repository
	// keeps (the `flux bootstrap` layout's flux-system directory;
	// patches.LoadRepositoryOverlay); Name is its directory in the
	// repository.
	SourceRepository
	// SourceInstance is the customization a FluxInstance declares.
	SourceInstance
)

// builtinName names the shipped overlays in messages.
const builtinName = "overlays (built in)"

// Builtin is the Source of the overlays this tool ships.
func Builtin() (Source, error) {
	sub, err := fs.Sub(bootstrap.Overlays, "overlays")
	return Source{Kind: SourceBuiltin, FS: sub, Name: builtinName}, err
}

// Output is a render and its proof.
type Output struct {
	// YAML is what step 1 applies.
	YAML     []byte
	Checks   []verify.Check
	Warnings []string
	Facts    map[string]string
	// Overlay holds the Deployments before and after the overlays, for the
	// phases that compare them with the cluster.
	Overlay *patches.Result
}

// PlainWarning is the loud notice every report carries under --plain.
const PlainWarning = "--plain: controller overlays skipped on purpose; kustomize-controller runs with its version's default feature gates"

// Run renders the components, applies the overlays and proves them
// (render.Run), with the customization o.Overlays selects.
func Run(ctx context.Context, o Options) (*Output, error) {
	co := o.Components
	if o.Manifests != "" {
		b, cleanup, err := OpenManifests(o.Manifests)
		if err != nil {
			return nil, err
		}
		defer cleanup()
		co.Bundle = b
	}
	src := o.Overlays
	var err error
	if src.Kind == SourceBuiltin && src.FS == nil {
		if src, err = Builtin(); err != nil {
			return nil, err
		}
	}
	var ov *patches.Overlay // nil: --plain
	switch src.Kind {
	case SourceInstance:
		ov = src.Inline
	case SourceRepository:
		ov, err = patches.LoadRepositoryOverlay(src.FS, src.Name)
	case SourceBuiltin, SourceDir:
		ov, err = patches.LoadOverlay(src.FS, src.Name)
	}
	if err != nil {
		return nil, err
	}
	r, err := render.Run(ctx, co, ov, o.Phrases)
	if err != nil {
		return nil, err
	}
	out := &Output{
		YAML:    r.YAML,
		Overlay: r.Overlay,
		Checks:  r.Checks,
		Facts: map[string]string{
			"fluxVersion": r.Components.FluxVersion,
			"bundle":      r.Components.Origin,
			"components":  strings.Join(r.Components.Components, ","),
			"overlays":    "(none)",
		},
	}
	if ov != nil {
		out.Facts["overlays"] = ov.Name
	}
	switch src.Kind {
	case SourceRepository:
		out.Facts["overlays"] = ov.Name + " (the repository's customization)"
	case SourceInstance:
		out.Facts["overlays"] = ov.Name + " (the FluxInstance's customization)"
	case SourceNone:
		out.Warnings = append(out.Warnings, PlainWarning)
		out.Facts["overlays"] = "skipped (--plain)"
	}
	return out, nil
}

// useInstance takes the controllers' customization from the FluxInstance
// that declares the environment's sync: its spec.kustomize.patches, which
// the Flux Operator applies to the manifests it generates. --overlays and
// --plain would install other controllers than the instance declares.
func (o *Options) useInstance(env *fluxrepo.Env) error {
	og := env.Origin
	where := og.PatchesLocation.String() + " " + strings.TrimSuffix(og.PatchesField, ".patches")
	switch o.Overlays.Kind {
	case SourceDir:
		return verify.InputErrorf("--overlays %s: the FluxInstance at %s declares the controllers' customization (%s); drop --overlays and put the patches there", o.Overlays.Name, og.Location, og.PatchesField)
	case SourceNone:
		return verify.InputErrorf("--plain: the FluxInstance at %s declares the controllers' customization (%s); drop --plain", og.Location, og.PatchesField)
	}
	ov, err := patches.InlineOverlay(og.Patches, where)
	if err != nil {
		return err
	}
	// The operator patches the sync objects in the same build: a patch may
	// land there only (patches.Overlay.SetSync).
	syncObjs, err := env.SyncObjects()
	if err != nil {
		return err
	}
	if len(syncObjs) > 0 {
		b, err := patches.SyncYAML(syncObjs)
		if err != nil {
			return err
		}
		ov.SetSync(b)
	}
	o.Overlays = Source{Kind: SourceInstance, Name: where, Inline: ov}
	return nil
}

// Phase is the render as a pipeline phase: the offline before-gates of step
// 1 (the overlays landed, the generated args kept, strict substitution on).
// It changes nothing; Output holds the render once Before ran.
type Phase struct {
	pipeline.Base // Do and After: a render changes nothing, and Before proves it all
	opts          Options
	Output        *Output
}

// NewPhase renders with o.
func NewPhase(o Options) *Phase { return &Phase{opts: o} }

// Name implements pipeline.Phase.
func (p *Phase) Name() string { return patches.PhaseName }

// Gates implements pipeline.Phase.
func (p *Phase) Gates() []verify.Def { return patches.Gates() }

// Before renders and proves the overlays; warnings and facts go to the
// report.
func (p *Phase) Before(ctx context.Context, run *pipeline.Run) ([]verify.Check, error) {
	out, err := Run(ctx, p.opts)
	if err != nil {
		return nil, err
	}
	for _, w := range out.Warnings {
		run.Report.Warn(w)
	}
	for k, v := range out.Facts {
		run.Report.Facts[k] = v
	}
	p.Output = out
	return out.Checks, nil
}

// UseRepository makes o render the controllers with the customization the
// environment's repository keeps, when it keeps one (the `flux bootstrap`
// layout: env.ControllersDir). The root applies that directory after every
// sync, so it is the customization that lasts: --overlays (which the root
// would undo) and --plain (which would not apply the patches the root
// applies) are refused with it, naming the directory.
func (o *Options) UseRepository(env *fluxrepo.Env) error {
	if og := env.Origin; og.Layout == fluxrepo.LayoutFluxInstance && len(og.Patches) > 0 {
		return o.useInstance(env)
	}
	dir := env.ControllersDir()
	if dir == "" {
		return nil
	}
	kust := dir + "/kustomization.yaml"
	switch o.Overlays.Kind {
	case SourceDir:
		return verify.InputErrorf("--overlays %s: the repository keeps the controllers' customization in %s, which the root applies again after every sync and would undo --overlays; drop --overlays and put the patches in %s",
			o.Overlays.Name, dir, kust)
	case SourceNone:
		return verify.InputErrorf("--plain: the repository keeps the controllers' customization in %s, which the root applies after every sync; drop --plain (the controllers are rendered with %s's patches)", dir, kust)
	}
	d, err := safeio.OpenDir(filepath.Join(env.Repo, filepath.FromSlash(dir)), dir)
	if err != nil {
		return err
	}
	o.Overlays = Source{Kind: SourceRepository, FS: d, Name: dir}
	return nil
}
