package check

import (
	"context"
	"fmt"
	"maps"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	fluxkustomize "github.com/fluxcd/pkg/kustomize"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/resource"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/resid"

	"github.com/homelab-ops/bootstrap/internal/fluxgraph"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// detRace is the [race] row of the table of detectors.
var detRace = detector{ID: RaceDep, Gate: Race, Advisory: true,
	Short:   "substitution race: substitutes from an object another Kustomization applies without depending on it",
	Rule:    "kustomize-controller v1.9.5 loads substituteFrom before it applies (kustomization_controller.go); dependsOn is revision-gated only within one source (fluxobj.RevisionGated)",
	Emitted: "checkRace",
}

// checkRace is check.race/<ns>/<name>: a Kustomization substituting from an
// object another Kustomization applies must depend on it, directly or
// through dependencies reading the same source (dependsOn is
// revision-gated only within one source: fluxobj.RevisionGated, which
// fluxgraph's GatedPath follows).
func checkRace(ch *checker, o Options, env *fluxrepo.Env, g *fluxgraph.Graph) []verify.Check {
	var out []verify.Check
	for _, k := range env.Kustomizations {
		if !k.Substitutes() || len(k.Spec.PostBuild.SubstituteFrom) == 0 {
			continue
		}
		var fs []finding
		var ev []string
		for _, ref := range k.Spec.PostBuild.SubstituteFrom {
			key := fluxrepo.DataKey(ref.Kind, k.Namespace, ref.Name)
			d := env.Data[key]
			if d == nil || d.AppliedBy == "" {
				continue // check.knobs / check.graph
			}
			applier, _ := fluxgraph.ParseID(d.AppliedBy)
			if d.AppliedBy == k.Ref() {
				if o.on(RaceDep) && !ref.Optional && substitutesAny(k) {
					f, seeded := selfApplied(o, env, k, ref, key, d)
					if seeded != "" {
						ev = append(ev, seeded)
					}
					if f != nil {
						fs = append(fs, *f)
						continue
					}
				}
				if o.on(RaceDep) {
					fs = append(fs, at(k.Location, verify.Finding{Detector: RaceDep, Verdict: verify.Warn,
						Message: fmt.Sprintf("Kustomization %s substitutes from %s, which it applies itself: a changed knob is substituted one reconcile late", k.Ref(), key),
						Fix:     fmt.Sprintf("move %s to a Kustomization that %s depends on", key, k.Ref())}))
				}
				continue
			}
			if via := g.GatedPath(fluxgraph.ID(k.Kustomization, env.Options.Namespace), applier); via != nil {
				ev = append(ev, fmt.Sprintf("%s is applied by %s; %s waits for it: %s", key, d.AppliedBy, k.Ref(), joinIDs(via)))
				continue
			}
			if d.FromManager {
				// A key's value is the secret manager's: it reaches the
				// Secret when external-secrets syncs it, which no dependsOn
				// on the applier orders, and no commit makes it exist.
				ev = append(ev, fmt.Sprintf("%s is %s from a secret manager: its values reach the Secret when external-secrets syncs it, not when %s applies, so a commit opens no race that dependsOn closes", key, d.Describe(), d.AppliedBy))
				continue
			}
			cause, causeFix := raceCause(env, k, d, applier)
			watched := o.watch.matches(clusterLabels(d, applier))
			if o.on(RaceDep) && watched {
				// kustomize-controller v1.9.5 watches substituteFrom objects
				// matching --watch-configs-label-selector and reconciles
				// their readers when one changes (kustomization_manager.go):
				// the window is one reconcile, failed in strict mode.
				fs = append(fs, at(k.Location, verify.Finding{Detector: RaceDep, Verdict: verify.Warn, Cause: cause + " (watched: one reconcile late)", Item: key, CauseFix: causeFix,
					Message: fmt.Sprintf("Kustomization %s substitutes from %s (%s), applied by %s, without depending on it; it is watched (%s), so a knob added in one commit fails (strict) or renders empty for one reconcile, until %s applies it and the watch reconciles %s again", k.Ref(), key, d.Location, d.AppliedBy, o.watch.because(), d.AppliedBy, k.Ref()),
					Fix:     fmt.Sprintf("add dependsOn: [%s] to Kustomization %s (%s) to close the window", dependsOnEntry(applier, k.Namespace), k.Ref(), k.Location)}))
				continue
			}
			if o.watch.Explicit || o.watch.Off != "" {
				ev = append(ev, fmt.Sprintf("%s is not watched: %s", key, o.watch.missed()))
			}
			if o.on(RaceDep) {
				f := at(k.Location, verify.Finding{Detector: RaceDep, Cause: cause, Item: key, CauseFix: causeFix,
					Message: fmt.Sprintf("Kustomization %s substitutes from %s (%s), applied by %s, without depending on it through same-source dependsOn: a knob added in one commit renders as missing (or empty) until %s applies it", k.Ref(), key, d.Location, d.AppliedBy, d.AppliedBy),
					Fix:     fmt.Sprintf("add dependsOn: [%s] to Kustomization %s (%s)", dependsOnEntry(applier, k.Namespace), k.Ref(), k.Location)})
				if how := o.BringUp[key]; how != "" {
					// The window opens on a later commit, not on this
					// bring-up: the object exists before the root applies
					// anything.
					f.Verdict, f.Cause = verify.Warn, cause+" (not at this bring-up: seeded)"
					f.Message += fmt.Sprintf(" — not on this bring-up: %s exists before the root's first reconcile (%s); bootstrap check fails it for the commits after", key, how)
				}
				fs = append(fs, f)
			}
		}
		out = append(out, ch.about(k, Race.Each(k.Ref()), fs, fmt.Sprintf("Kustomization %s waits for whoever applies what it substitutes from", k.Ref()), ev...))
	}
	if len(out) == 0 {
		out = append(out, Race.Pass("no Kustomization substitutes from an object the environment renders"))
	}
	return out
}

// clusterLabels are the labels d carries in the cluster, which the watch
// selects on: its own, and the owner labels kustomize-controller's apply
// sets on every object it applies (fluxgraph.AppliedByNameLabel), unless
// another controller makes it.
func clusterLabels(d *fluxrepo.Data, applier fluxgraph.NodeID) map[string]string {
	l := maps.Clone(d.Labels)
	if l == nil {
		l = map[string]string{}
	}
	if d.MadeBy == "" {
		l[fluxgraph.AppliedByNameLabel], l[fluxgraph.AppliedByNamespaceLabel] = applier.Name, applier.Namespace
	}
	return l
}

// selfApplied judges Kustomization k substituting (not optionally) from
// d, which only k applies: on a fresh cluster kustomize-controller loads
// substituteFrom before it applies anything (fluxcd/pkg/kustomize
// LoadVariables fails the build), so d must exist before k's first
// reconcile. Seeded by the repository's own bootstrap (bootstrapfiles) or
// declared in PolicyFile: it does (seeded is the evidence; nil finding).
// Not seeded, k the root: `bootstrap up` seeds it from the file before the
// root's first reconcile, a plain flux bootstrap deadlocks (a warning).
// Otherwise nothing creates it (a failure).
func selfApplied(o Options, env *fluxrepo.Env, k *fluxrepo.Kustomization, ref kustomizev1.SubstituteReference, key string, d *fluxrepo.Data) (f *finding, seeded string) {
	if b := o.Policy.seededBy(key); b != nil {
		return nil, fmt.Sprintf("%s, which only %s applies, is seeded by the repository's bootstrap (%s at %s) before Flux: %s comes up on a fresh cluster", key, k.Ref(), b.How, b.Location, k.Ref())
	}
	if o.Policy.prerequisite(key) != nil {
		return nil, ""
	}
	if env.Root != nil && env.Root.Ref() == k.Ref() && d.MadeBy == "" {
		deadlock := at(k.Location, verify.Finding{Detector: RaceDep, Verdict: verify.Warn,
			Message: fmt.Sprintf("root Kustomization %s substitutes from %s (%s), which only it applies: a plain flux bootstrap deadlocks here — kustomize-controller loads substituteFrom before it applies anything and fails the build (%s); bootstrap up seeds %s from %s before the root's first reconcile, and a changed knob is then substituted one reconcile late", k.Ref(), key, d.Location, freshClusterError(k, ref), key, d.Location.File),
			Fix:     fmt.Sprintf("create %s in the repository's bootstrap before Flux (or declare it under prerequisites.declared in %s), mark it optional: true in spec.postBuild.substituteFrom of Kustomization %s (%s), or move it to a Kustomization that %s depends on", key, PolicyFile, k.Ref(), k.Location, k.Ref())})
		return &deadlock, ""
	}
	never := at(k.Location, verify.Finding{Detector: RaceDep,
		Message: fmt.Sprintf("Kustomization %s substitutes from %s (%s), which only it applies%s and nothing else creates: it cannot come up on a fresh cluster — kustomize-controller loads substituteFrom before it applies anything and fails the build (%s), so %s is never created", k.Ref(), key, d.Location, madeBy(d), freshClusterError(k, ref), key),
		Fix:     fmt.Sprintf("mark it optional: true in spec.postBuild.substituteFrom of Kustomization %s (%s) (the first reconcile renders without it, the next substitutes it), or move %s to a Kustomization that %s depends on", k.Ref(), k.Location, key, k.Ref())})
	return &never, ""
}

// madeBy says which object k applies makes d at runtime, when one does.
func madeBy(d *fluxrepo.Data) string {
	if d.MadeBy == "" {
		return ""
	}
	return " (made by " + d.MadeBy + ", which it applies)"
}

// substitutesAny says some object of k goes through substitution:
// fluxcd/pkg/kustomize SubstituteVariables returns before it loads the
// substituteFrom objects for one labelled or annotated
// kustomize.toolkit.fluxcd.io/substitute: disabled.
func substitutesAny(k *fluxrepo.Kustomization) bool {
	for _, r := range k.Resources {
		if !fluxrepo.SubstitutionDisabled(r) {
			return true
		}
	}
	return false
}

// freshClusterError is what kustomize-controller reports for k on a
// cluster without the object ref names: its own code
// (fluxcd/pkg/kustomize LoadVariables, v1.35.6 as kustomize-controller
// v1.9.5 builds with) asked of a cluster that has nothing.
func freshClusterError(k *fluxrepo.Kustomization, ref kustomizev1.SubstituteReference) string {
	kc := k.DeepCopy()
	kc.Spec.PostBuild.SubstituteFrom = []kustomizev1.SubstituteReference{ref}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(kc)
	if err == nil {
		_, err = fluxkustomize.LoadVariables(context.Background(), fluxrepo.DataClient{Env: &fluxrepo.Env{}}, unstructured.Unstructured{Object: u})
	}
	if err == nil {
		return "not found"
	}
	return err.Error()
}

// dependsOnEntry is the dependsOn entry naming id from a dependent in
// namespace ns: the namespace is spelled out when it differs, since
// kustomize-controller defaults it to the dependent's own (an entry without
// it would fail "dependency not found").
func dependsOnEntry(id fluxgraph.NodeID, ns string) string {
	if id.Namespace == ns {
		return fmt.Sprintf("{name: %s}", id.Name)
	}
	return fmt.Sprintf("{name: %s, namespace: %s}", id.Name, id.Namespace)
}

// raceCause is the defect a [race] finding shares with its siblings, and
// its one fix when there is one. The homelab shape (DESIGN.md §10): a
// parent Kustomization applies the children and a settings object, and
// one of its spec.patches sets every child's substituteFrom — without
// dependsOn on the parent. Every child reached by that patch is one
// defect, and the fix is that patch: kustomize-controller passes
// spec.patches to kustomize as the generated kustomization's patches
// (fluxcd/pkg/kustomize Generator), and kustomize applies each to the
// objects its target selects (sigs.k8s.io/kustomize/api resmap Select:
// name, namespace, GVK as regular expressions, label and annotation
// selectors) — read in kustomize api v0.21.2, the one this module builds
// with, as kustomize-controller v1.9.5 does.
func raceCause(env *fluxrepo.Env, k *fluxrepo.Kustomization, d *fluxrepo.Data, applier fluxgraph.NodeID) (cause, fix string) {
	cause = fmt.Sprintf("substitute from %s, applied by Kustomization %s, without depending on it", d.Key(), d.AppliedBy)
	p := env.Kustomization(applier.Namespace, applier.Name)
	if p == nil || k.AppliedBy != p.Ref() || p.Spec.Wait {
		// A parent with wait: true health-checks its children: a child
		// depending on it would deadlock, so no patch fixes it.
		return cause, ""
	}
	i, loc := reachingPatch(env, p, k, d.Name)
	if i < 0 {
		return cause, ""
	}
	cause = fmt.Sprintf("substitute from %s %s, set by spec.patches[%d] of Kustomization %s (%s), which applies it, without depending on %s", d.Kind, d.Name, i, p.Ref(), loc, p.Ref())
	fix = fmt.Sprintf("one patch for them all: add dependsOn: [{name: %s, namespace: %s}] to spec.patches[%d] of Kustomization %s (%s), the patch that sets their substituteFrom; it reaches every Kustomization named (keep wait: false on %s)",
		p.Name, p.Namespace, i, p.Ref(), loc, p.Ref())
	return cause, fix
}

// reachingPatch is the index and location of the patch of parent p's
// spec.patches whose target selects child k and that sets a substituteFrom
// naming name (-1 when none).
func reachingPatch(env *fluxrepo.Env, p, k *fluxrepo.Kustomization, name string) (int, fluxrepo.Location) {
	var child *resource.Resource
	for _, r := range p.Resources {
		if r.GetKind() == kustomizev1.KustomizationKind && r.GetName() == k.Name && (r.GetNamespace() == k.Namespace || r.GetNamespace() == "") {
			child = r
			break
		}
	}
	if child == nil {
		return -1, fluxrepo.Location{}
	}
	m := resmap.New()
	if err := m.Append(child); err != nil {
		return -1, fluxrepo.Location{}
	}
	for i, pt := range p.Spec.Patches {
		if pt.Target == nil || !strings.Contains(pt.Patch, "substituteFrom") || !strings.Contains(pt.Patch, name) {
			continue
		}
		t := pt.Target
		sel, err := m.Select(kustypes.Selector{ResId: resid.ResId{Gvk: resid.Gvk{Group: t.Group, Version: t.Version, Kind: t.Kind}, Name: t.Name, Namespace: t.Namespace},
			LabelSelector: t.LabelSelector, AnnotationSelector: t.AnnotationSelector})
		if err != nil || len(sel) == 0 {
			continue
		}
		loc := p.Location
		if ls := env.Lines(p.Location.File, p.Location.Line, "substituteFrom"); len(ls) > 0 {
			loc.Line = ls[0]
		}
		return i, loc
	}
	return -1, fluxrepo.Location{}
}

func joinIDs(ids []fluxgraph.NodeID) string {
	s := make([]string, 0, len(ids))
	for _, id := range ids {
		s = append(s, id.String())
	}
	return strings.Join(s, " -> ")
}
