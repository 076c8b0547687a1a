package fluxrelease

import (
	"context"
	"fmt"
	"sync"

	runtimectrl "github.com/fluxcd/pkg/runtime/controller"
	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/homelab-ops/bootstrap/internal/bootstrapfiles"
	"github.com/homelab-ops/bootstrap/internal/customize"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/pkg/components"
	"github.com/homelab-ops/bootstrap/pkg/patches"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// Controller is kustomize-controller as an environment deploys it on its
// release: what its effective flags decide. check judges by it and diff
// renders by it, so both read it here.
type Controller struct {
	// Strict is its effective StrictPostBuildSubstitutions.
	Strict Strictness
	// Watch is its watch on the ConfigMaps and Secrets Kustomizations read.
	Watch Watch
	// Flags are its manager's flags, set by By (where the repository
	// customizes the controllers, else the release's Deployment). Rendered
	// false: none were read (an Old release, or one rendering no
	// kustomize-controller).
	Flags    patches.Flags
	By       string
	Rendered bool
	// Unread: the repository's customization of the controllers could
	// not be rendered, so the release's default was taken (a warning).
	Unread error
}

// Strictness is kustomize-controller's effective
// StrictPostBuildSubstitutions, and why (e.g. "kustomize-controller v1.4.0
// (Flux v2.4.0) defaults StrictPostBuildSubstitutions to false"). On: an
// undefined ${VAR} fails the Kustomization's build; off: it renders as the
// empty string.
type Strictness struct {
	On  bool
	Why string
}

// Mode names it for messages: "strict" or "not strict".
func (s Strictness) Mode() string {
	if s.On {
		return "strict"
	}
	return "not strict"
}

// Watch is kustomize-controller's watch on the ConfigMaps and Secrets
// Kustomizations read (kustomization_manager.go SetupWithManager:
// WatchesMetadata of ConfigMaps and Secrets with the predicate main.go
// builds from --watch-configs-label-selector; a changed object reconciles
// every Kustomization whose postBuild.substituteFrom names it).
type Watch struct {
	// Predicate is fluxcd/pkg/runtime/controller GetWatchConfigsPredicate
	// of the effective selector; nil when nothing is watched (Off).
	Predicate predicate.Predicate
	// Selector is the flag's value when set explicitly, by Where.
	Selector string
	Explicit bool
	Where    string
	// Default is the flag's default (WatchOptions.BindFlags).
	Default string
	// Off says why nothing is watched (DisableConfigWatchers set).
	Off string
}

// Deployed is what env deploys: its release (ForEnvWith: explicit when
// given, else the one the repository declares, else the pinned one) and
// kustomize-controller there (KustomizeController). b is the repository's
// bootstrap (bootstrapfiles.Read, nil: none).
func Deployed(ctx context.Context, env *fluxrepo.Env, explicit, from string, b *bootstrapfiles.Bootstrap) (Release, Controller, error) {
	rel, err := ForEnvWith(env, explicit, from, b)
	if err != nil {
		return Release{}, Controller{}, err
	}
	c, err := KustomizeController(ctx, env, rel)
	if err != nil {
		return Release{}, Controller{}, err
	}
	return rel, c, nil
}

// KustomizeController reads kustomize-controller's effective flags as env
// deploys it on rel (kustomizeDeployment): StrictPostBuildSubstitutions
// (patches.EffectiveGate, else that version's default) and the watch on
// ConfigMaps and Secrets (watchOf). Flags kustomize-controller refuses at
// start-up are an input error naming where they are set.
func KustomizeController(ctx context.Context, env *fluxrepo.Env, rel Release) (Controller, error) {
	if rel.Old {
		// kustomize-controller before v1.1.0 has no strict mode, and no
		// later release defaults it on before v1.9.0 (Flux 2.9).
		return Controller{Strict: Strictness{Why: fmt.Sprintf("Flux %s's kustomize-controller substitutes without StrictPostBuildSubstitutions (on by default only from kustomize-controller v1.9.0, Flux v2.9.0)", rel.Declared)},
			Watch: DefaultWatch()}, nil
	}
	version := rel.Version
	d, where, unread, err := kustomizeDeployment(ctx, env, version)
	if err != nil {
		return Controller{}, err
	}
	if d == nil {
		return Controller{Strict: Strictness{Why: fmt.Sprintf("Flux %s renders no kustomize-controller", version)}, Watch: DefaultWatch(), Unread: unread}, nil
	}
	by := where
	if by == "" {
		by = fmt.Sprintf("Flux %s's kustomize-controller Deployment", version)
	}
	kv := patches.ImageVersion(patches.ManagerImage(d))
	f, err := patches.ManagerFlags(d)
	if err != nil {
		return Controller{}, verify.InputErrorf("kustomize-controller of Flux %s as %s customizes it: %v; fix the --feature-gates value", version, by, err)
	}
	c := Controller{Strict: strictOf(f, kv, version, by), Flags: f, By: by, Rendered: true, Unread: unread}
	if c.Watch, err = watchOf(f, kv, by); err != nil {
		return Controller{}, err
	}
	return c, nil
}

// kustomizeDeployment is the release's kustomize-controller Deployment
// with the repository's own customization of the controllers (a
// FluxInstance's spec.kustomize.patches, flux bootstrap's
// flux-system/kustomization.yaml patches; customize.UseRepository), and
// where that customization is ("" when there is none). unread: the
// customization does not render, and the release's Deployment is taken.
func kustomizeDeployment(ctx context.Context, env *fluxrepo.Env, version string) (dep *appsv1.Deployment, where string, unread error, err error) {
	ro := customize.Options{Components: components.DefaultOptions(version)}
	if err := ro.UseRepository(env); err != nil {
		return nil, "", nil, err
	}
	var deps []appsv1.Deployment
	if ro.Overlays.Kind == customize.SourceInstance || ro.Overlays.Kind == customize.SourceRepository {
		out, err := customize.Run(ctx, ro)
		if err == nil {
			deps, where = out.Overlay.Final, ro.Overlays.Name
		} else {
			// The sync and controllers phases refuse it; the offline
			// check judges by the release's default and says so.
			unread = fmt.Errorf("the repository's customization of the controllers (%s) does not render over Flux %s: %w", ro.Overlays.Name, version, err)
		}
	}
	if deps == nil {
		// The release's kustomize-controller as released: no render needed.
		b, err := components.EmbeddedBundle(version)
		if err != nil {
			return nil, "", nil, err
		}
		d, err := b.Deployment("kustomize-controller")
		if err != nil {
			return nil, "", nil, err
		}
		deps = []appsv1.Deployment{*d}
	}
	for i := range deps {
		if deps[i].Name == "kustomize-controller" {
			return &deps[i], where, unread, nil
		}
	}
	return nil, where, unread, nil
}

// strictOf is the effective StrictPostBuildSubstitutions in f, set by by,
// else kustomize-controller kv's default.
func strictOf(f patches.Flags, kv, version, by string) Strictness {
	g := patches.EffectiveGate("kustomize-controller", kv, f, patches.StrictSubstitution)
	s := Strictness{On: g.Value}
	switch {
	case g.Explicit:
		s.Why = fmt.Sprintf("%s=%t set by %s (kustomize-controller %s)", patches.StrictSubstitution, g.Value, by, kv)
	case g.DefaultKnown:
		s.Why = fmt.Sprintf("kustomize-controller %s (Flux %s) defaults %s to %t", kv, version, patches.StrictSubstitution, g.Default)
	default:
		s.Why = fmt.Sprintf("kustomize-controller %s (Flux %s): the default of %s is not recorded, taken as off", kv, version, patches.StrictSubstitution)
	}
	return s
}

// WatchConfigsFlag is kustomize-controller's flag, as fluxcd/pkg/runtime
// v0.110.3 controller.WatchOptions.BindFlags binds it.
const WatchConfigsFlag = "watch-configs-label-selector"

// disableConfigWatchers is the gate (fluxcd/pkg/runtime/controller
// FeatureGateDisableConfigWatchers) with which kustomize-controller's
// main.go sets KustomizationReconcilerOptions.WatchConfigs false.
const disableConfigWatchers = runtimectrl.FeatureGateDisableConfigWatchers

// watchOf is the watch kustomize-controller kv runs with flags f, set by
// by. The selector is parsed by the controller's own code: f's last value
// of the flag (pflag's, as patches.ParseArgs keeps it) bound by
// WatchOptions.BindFlags, whose default applies when the flag is unset,
// and made a predicate by GetWatchConfigsPredicate (labels.Parse; an empty
// selector watches everything). A selector that does not parse makes
// main.go exit at start-up ("unable to configure watch configs label
// selector"): an input error naming where it is set.
func watchOf(f patches.Flags, kv, by string) (Watch, error) {
	var wo runtimectrl.WatchOptions
	fs := pflag.NewFlagSet("kustomize-controller", pflag.ContinueOnError)
	wo.BindFlags(fs)
	w := Watch{Where: by, Default: fs.Lookup(WatchConfigsFlag).DefValue}
	if v, ok := f.Values[WatchConfigsFlag]; ok {
		if err := fs.Set(WatchConfigsFlag, v); err != nil {
			return Watch{}, err
		}
		w.Selector, w.Explicit = v, true
	}
	pred, err := runtimectrl.GetWatchConfigsPredicate(wo)
	if err != nil {
		return Watch{}, verify.InputErrorf("kustomize-controller's --%s=%s, set by %s, is not a label selector (%v): kustomize-controller exits at start-up (unable to configure watch configs label selector); fix the selector there (e.g. owner!=helm), or remove the arg for the default %s",
			WatchConfigsFlag, w.Selector, by, err, w.Default)
	}
	w.Predicate = pred
	if g := patches.EffectiveGate("kustomize-controller", kv, f, disableConfigWatchers); g.Value {
		w.Predicate, w.Off = nil, fmt.Sprintf("--%s=%s=true set by %s: it watches no ConfigMap or Secret", patches.FeatureGatesFlag, disableConfigWatchers, by)
	}
	return w, nil
}

// DefaultWatch is the watch of a kustomize-controller with no flag set.
var DefaultWatch = sync.OnceValue(func() Watch {
	w, err := watchOf(patches.Flags{}, "", "")
	if err != nil {
		panic(err) // the controller's own default parses
	}
	return w
})
