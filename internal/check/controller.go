package check

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	runtimectrl "github.com/fluxcd/pkg/runtime/controller"
	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/homelab-ops/bootstrap/internal/customize"
	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/pkg/components"
	"github.com/homelab-ops/bootstrap/pkg/patches"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// controller is kustomize-controller as the environment deploys it: what
// its effective flags decide for the checks.
type controller struct {
	strict strictness
	watch  watching
	// flags are the other flags read that bear on verdicts, as evidence of
	// check.flux-release (recorded, not judged).
	flags []string
}

// kustomizeController is the release's kustomize-controller Deployment
// with the repository's own customization of the controllers (a
// FluxInstance's spec.kustomize.patches, flux bootstrap's
// flux-system/kustomization.yaml patches; customize.UseRepository), and
// where that customization is ("" when there is none). unread: the
// customization does not render, and the release's Deployment is taken.
func kustomizeController(ctx context.Context, env *fluxrepo.Env, version string) (dep *appsv1.Deployment, where string, unread error, err error) {
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

// controllerOf reads kustomize-controller's effective flags as the
// environment deploys it (kustomizeController): StrictPostBuildSubstitutions
// (patches.EffectiveGate, else that version's default), the watch on
// ConfigMaps and Secrets (watchOf), and the other flags repositories set.
func controllerOf(ctx context.Context, env *fluxrepo.Env, version string) (controller, error) {
	d, where, unread, err := kustomizeController(ctx, env, version)
	if err != nil {
		return controller{}, err
	}
	if d == nil {
		return controller{strict: strictness{why: fmt.Sprintf("Flux %s renders no kustomize-controller", version), unread: unread}, watch: defaultWatch()}, nil
	}
	by := where
	if by == "" {
		by = fmt.Sprintf("Flux %s's kustomize-controller Deployment", version)
	}
	kv := patches.ImageVersion(patches.ManagerImage(d))
	f, err := patches.ManagerFlags(d)
	if err != nil {
		return controller{}, verify.InputErrorf("kustomize-controller of Flux %s as %s customizes it: %v; fix the --feature-gates value", version, by, err)
	}
	c := controller{strict: strictOf(f, kv, version, by)}
	c.strict.unread = unread
	if c.watch, err = watchOf(f, kv, by); err != nil {
		return controller{}, err
	}
	unset := "the default"
	if env.Origin.Layout == fluxrepo.LayoutFluxInstance {
		// The operator's size profiles set --concurrent and
		// --requeue-dependency (DESIGN.md §8); they are not rendered here.
		unset = "the default unless the FluxInstance's cluster.size profile sets it, which this check does not model"
	}
	c.flags = flagFacts(f, by, unset)
	return c, nil
}

// strictOf is the effective StrictPostBuildSubstitutions in f, set by by,
// else kustomize-controller kv's default.
func strictOf(f patches.Flags, kv, version, by string) strictness {
	g := patches.EffectiveGate("kustomize-controller", kv, f, patches.StrictSubstitution)
	s := strictness{on: g.Value}
	switch {
	case g.Explicit:
		s.why = fmt.Sprintf("%s=%t set by %s (kustomize-controller %s)", patches.StrictSubstitution, g.Value, by, kv)
	case g.DefaultKnown:
		s.why = fmt.Sprintf("kustomize-controller %s (Flux %s) defaults %s to %t", kv, version, patches.StrictSubstitution, g.Default)
	default:
		s.why = fmt.Sprintf("kustomize-controller %s (Flux %s): the default of %s is not recorded, taken as off", kv, version, patches.StrictSubstitution)
	}
	return s
}

// watching is kustomize-controller's watch on the ConfigMaps and Secrets
// Kustomizations read (kustomization_manager.go SetupWithManager:
// WatchesMetadata of ConfigMaps and Secrets with the predicate main.go
// builds from --watch-configs-label-selector; a changed object reconciles
// every Kustomization whose postBuild.substituteFrom names it).
type watching struct {
	// pred is fluxcd/pkg/runtime/controller GetWatchConfigsPredicate of the
	// effective selector; nil when nothing is watched (off).
	pred predicate.Predicate
	// selector is the flag's value when set explicitly, by where.
	selector string
	explicit bool
	where    string
	// def is the flag's default (WatchOptions.BindFlags).
	def string
	// off says why nothing is watched (DisableConfigWatchers set).
	off string
}

// watchConfigsFlag is kustomize-controller's flag, as fluxcd/pkg/runtime
// v0.110.3 controller.WatchOptions.BindFlags binds it.
const watchConfigsFlag = "watch-configs-label-selector"

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
func watchOf(f patches.Flags, kv, by string) (watching, error) {
	var wo runtimectrl.WatchOptions
	fs := pflag.NewFlagSet("kustomize-controller", pflag.ContinueOnError)
	wo.BindFlags(fs)
	w := watching{where: by, def: fs.Lookup(watchConfigsFlag).DefValue}
	if v, ok := f.Values[watchConfigsFlag]; ok {
		if err := fs.Set(watchConfigsFlag, v); err != nil {
			return watching{}, err
		}
		w.selector, w.explicit = v, true
	}
	pred, err := runtimectrl.GetWatchConfigsPredicate(wo)
	if err != nil {
		return watching{}, verify.InputErrorf("kustomize-controller's --%s=%s, set by %s, is not a label selector (%v): kustomize-controller exits at start-up (unable to configure watch configs label selector); fix the selector there (e.g. owner!=helm), or remove the arg for the default %s",
			watchConfigsFlag, w.selector, by, err, w.def)
	}
	w.pred = pred
	if g := patches.EffectiveGate("kustomize-controller", kv, f, disableConfigWatchers); g.Value {
		w.pred, w.off = nil, fmt.Sprintf("--%s=%s=true set by %s: it watches no ConfigMap or Secret", patches.FeatureGatesFlag, disableConfigWatchers, by)
	}
	return w, nil
}

// defaultWatch is the watch of a kustomize-controller with no flag set.
var defaultWatch = sync.OnceValue(func() watching {
	w, err := watchOf(patches.Flags{}, "", "")
	if err != nil {
		panic(err) // the controller's own default parses
	}
	return w
})

// matches says a change of an object labelled so reconciles its readers:
// the predicate of an update event, as the controller's watch sees one.
func (w watching) matches(labels map[string]string) bool {
	if w.pred == nil && w.off == "" {
		w = defaultWatch()
	}
	if w.pred == nil {
		return false
	}
	o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Labels: labels}}
	return w.pred.Update(event.UpdateEvent{ObjectOld: o, ObjectNew: o})
}

// because says why an object it matches is watched, for messages.
func (w watching) because() string {
	if !w.explicit {
		return "reconcile.fluxcd.io/watch: Enabled"
	}
	return fmt.Sprintf("it matches --%s=%s set by %s", watchConfigsFlag, w.selector, w.where)
}

// missed says why an object it does not match is not watched.
func (w watching) missed() string {
	if w.off != "" {
		return "kustomize-controller runs with " + w.off
	}
	return fmt.Sprintf("its labels do not match --%s=%s set by %s", watchConfigsFlag, w.selector, w.where)
}

// fact is the watch as evidence.
func (w watching) fact() string {
	switch {
	case w.off != "":
		return "kustomize-controller " + w.off
	case w.explicit:
		return fmt.Sprintf("kustomize-controller --%s=%s set by %s: a change of a ConfigMap or Secret it matches reconciles the Kustomizations reading it", watchConfigsFlag, w.selector, w.where)
	}
	return fmt.Sprintf("kustomize-controller --%s: %s (the default)", watchConfigsFlag, w.def)
}

// The defaults of kustomize-controller v1.9.5's main.go for the flags
// recorded (flag.IntVar(&concurrent, "concurrent", 4, …);
// flag.StringVar(&sopsAgeSecret, "sops-age-secret", "", …)).
const (
	concurrentFlag    = "concurrent"
	defaultConcurrent = 4
)

// flagFacts records the other flags repositories set on
// kustomize-controller that bear on how it runs what check judges:
// --requeue-dependency (how long a blocked dependent waits), --concurrent
// (its workers), --sops-age-secret (the fallback age key) and the
// --feature-gates args. Read, not judged; unset says what an unset flag
// is.
func flagFacts(f patches.Flags, by, unset string) []string {
	var out []string
	switch d, explicit, err := fluxobj.RequeueDependency(f); {
	case err != nil:
		out = append(out, fmt.Sprintf("kustomize-controller %v (set by %s): not a duration, the controller would not start", err, by))
	case explicit:
		out = append(out, fmt.Sprintf("kustomize-controller --%s=%s set by %s", fluxobj.RequeueDependencyFlag, d, by))
	default:
		out = append(out, fmt.Sprintf("kustomize-controller --%s: %s (%s)", fluxobj.RequeueDependencyFlag, d, unset))
	}
	if v, ok := f.Values[concurrentFlag]; ok {
		// pflag's int: strconv.ParseInt(s, 0, 64).
		if _, err := strconv.ParseInt(v, 0, 64); err != nil {
			out = append(out, fmt.Sprintf("kustomize-controller --%s=%s (set by %s): not an integer, the controller would not start", concurrentFlag, v, by))
		} else {
			out = append(out, fmt.Sprintf("kustomize-controller --%s=%s set by %s", concurrentFlag, v, by))
		}
	} else {
		out = append(out, fmt.Sprintf("kustomize-controller --%s: %d (%s)", concurrentFlag, defaultConcurrent, unset))
	}
	if v := f.Values[fluxobj.SOPSAgeFlag]; v != "" {
		out = append(out, fmt.Sprintf("kustomize-controller --%s=%s set by %s: a Kustomization decrypting with provider sops and no secretRef imports that Secret", fluxobj.SOPSAgeFlag, v, by))
	}
	for _, a := range f.GateArgs {
		out = append(out, fmt.Sprintf("kustomize-controller %s set by %s", a, by))
	}
	return out
}
