package check

import (
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/internal/fluxrelease"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/pkg/patches"
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

// controllerOf is what kustomize-controller as the environment deploys it
// (fluxrelease.KustomizeController) decides for the checks, with the
// other flags repositories set as evidence.
func controllerOf(env *fluxrepo.Env, kc fluxrelease.Controller) controller {
	c := controller{strict: strictness{on: kc.Strict.On, why: kc.Strict.Why, unread: kc.Unread}, watch: watchingOf(kc.Watch)}
	if !kc.Rendered {
		return c
	}
	unset := "the default"
	if env.Origin.Layout == fluxrepo.LayoutFluxInstance {
		// The operator's size profiles set --concurrent and
		// --requeue-dependency (DESIGN.md §8); they are not rendered here.
		unset = "the default unless the FluxInstance's cluster.size profile sets it, which this check does not model"
	}
	c.flags = flagFacts(kc.Flags, kc.By, unset)
	return c
}

// watching is kustomize-controller's watch on the ConfigMaps and Secrets
// Kustomizations read (fluxrelease.Watch), with
// the words check says of it.
type watching struct{ fluxrelease.Watch }

// watchingOf is w as check reads it.
func watchingOf(w fluxrelease.Watch) watching { return watching{w} }

// defaultWatch is the watch of a kustomize-controller with no flag set.
func defaultWatch() watching { return watchingOf(fluxrelease.DefaultWatch()) }

// matches says a change of an object labelled so reconciles its readers:
// the predicate of an update event, as the controller's watch sees one.
func (w watching) matches(labels map[string]string) bool {
	if w.Predicate == nil && w.Off == "" {
		w = defaultWatch()
	}
	if w.Predicate == nil {
		return false
	}
	o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Labels: labels}}
	return w.Predicate.Update(event.UpdateEvent{ObjectOld: o, ObjectNew: o})
}

// because says why an object it matches is watched, for messages.
func (w watching) because() string {
	if !w.Explicit {
		return "reconcile.fluxcd.io/watch: Enabled"
	}
	return fmt.Sprintf("it matches --%s=%s set by %s", fluxrelease.WatchConfigsFlag, w.Selector, w.Where)
}

// missed says why an object it does not match is not watched.
func (w watching) missed() string {
	if w.Off != "" {
		return "kustomize-controller runs with " + w.Off
	}
	return fmt.Sprintf("its labels do not match --%s=%s set by %s", fluxrelease.WatchConfigsFlag, w.Selector, w.Where)
}

// fact is the watch as evidence.
func (w watching) fact() string {
	switch {
	case w.Off != "":
		return "kustomize-controller " + w.Off
	case w.Explicit:
		return fmt.Sprintf("kustomize-controller --%s=%s set by %s: a change of a ConfigMap or Secret it matches reconciles the Kustomizations reading it", fluxrelease.WatchConfigsFlag, w.Selector, w.Where)
	}
	return fmt.Sprintf("kustomize-controller --%s: %s (the default)", fluxrelease.WatchConfigsFlag, w.Default)
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
