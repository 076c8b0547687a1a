package check

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// detPrune is the [prune-hazard] row of the table of detectors.
var detPrune = detector{ID: Prune, Gate: PruneHazard, Advisory: true,
	Short:   "prune: true Kustomization is the only declarer of a shared Namespace",
	Rule:    "kustomize-controller v1.9.5 prune (fluxcd/pkg/ssa DeleteAll of the inventory's stale objects) deletes a Namespace no longer declared, unless annotated kustomize.toolkit.fluxcd.io/prune: disabled",
	Emitted: "checkPrune",
}

// sharedNamespaces are Namespaces no single Kustomization should own.
var sharedNamespaces = []string{"kube-system", fluxobj.DefaultNamespace, "default"}

// checkPrune is check.prune-hazard/<ns>/<name>/<namespace>: a prune: true
// Kustomization that is the only declarer of a shared Namespace turns a move
// of that file into "delete namespace".
func checkPrune(ch *checker, o Options, env *fluxrepo.Env) []verify.Check {
	declarers := map[string][]*fluxrepo.Kustomization{}
	deployers := map[string]map[string]bool{}
	protected := map[string]bool{}
	for _, k := range env.Kustomizations {
		if !k.Built {
			continue
		}
		add := func(ns string) {
			if ns == "" {
				return
			}
			if deployers[ns] == nil {
				deployers[ns] = map[string]bool{}
			}
			deployers[ns][k.Ref()] = true
		}
		add(k.Spec.TargetNamespace)
		for _, r := range k.Resources {
			// Owned under the name the cluster gets: a component's
			// ${NAMESPACE} as k substitutes it.
			if strings.Contains(r.GetName(), "${") || strings.Contains(r.GetNamespace(), "${") {
				r = env.Applied(k, r)
			}
			if r.GetKind() == "Namespace" && r.GetApiVersion() == "v1" {
				if !slices.Contains(declarers[r.GetName()], k) {
					declarers[r.GetName()] = append(declarers[r.GetName()], k)
				}
				if r.GetAnnotations()["kustomize.toolkit.fluxcd.io/prune"] == "disabled" || r.GetLabels()["kustomize.toolkit.fluxcd.io/prune"] == "disabled" {
					protected[r.GetName()+"@"+k.Ref()] = true
				}
				continue
			}
			add(r.GetNamespace())
		}
	}
	var out []verify.Check
	for _, ns := range slices.Sorted(maps.Keys(declarers)) {
		ks := declarers[ns]
		if len(ks) != 1 {
			continue
		}
		k := ks[0]
		if !k.Spec.Prune || protected[ns+"@"+k.Ref()] {
			continue
		}
		// The root declaring the namespace it lives in (flux bootstrap's
		// gotk-components.yaml): moving that file moves the environment
		// itself, and the root would prune itself with it.
		if k == env.Root && ns == k.Namespace {
			continue
		}
		var others []string
		for d := range deployers[ns] {
			if d != k.Ref() {
				others = append(others, d)
			}
		}
		slices.Sort(others)
		if !slices.Contains(sharedNamespaces, ns) && len(others) == 0 {
			continue
		}
		why := "a shared system namespace"
		if len(others) > 0 {
			why = "Kustomizations " + strings.Join(others, ", ") + " deploy into it"
		}
		if !o.on(Prune) {
			continue
		}
		decl := env.Locate(k.Files, "Namespace", "", ns)
		out = append(out, ch.verdict(PruneHazard.Each(k.Ref()+"/"+ns), []finding{at(decl, verify.Finding{Detector: Prune, Verdict: verify.Warn,
			Message: fmt.Sprintf("Kustomization %s (prune: true) is the only declarer of Namespace %s (%s): moving that file out of %s deletes the namespace and everything in it", k.Ref(), ns, why, k.Path),
			Fix:     "declare Namespace " + ns + " in a Kustomization that never moves, or annotate it kustomize.toolkit.fluxcd.io/prune: disabled"})}, ""))
	}
	if len(out) == 0 {
		out = append(out, PruneHazard.Pass("no prune: true Kustomization is the sole declarer of a shared Namespace"))
	}
	return out
}
