package check

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/homelab-ops/bootstrap/internal/fluxgraph"
	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// detWaitOrder is the [wait-order] row of the table of detectors.
var detWaitOrder = detector{ID: WaitOrder, Gate: Graph, Advisory: true,
	Short: "Kustomization health-checking a HelmRelease whose dependencies another Kustomization applies, without depending on it: it holds a kustomize-controller worker meanwhile",
	Rule:  "kustomize-controller v1.9.5 holds one of its --concurrent workers for the health check; helm-controller v1.6.4 checkDependencies keeps the release DependencyNotReady",
	graph: func(gs *graphScan) []finding { return waitOrder(gs.env, gs.g) }, after: true,
}

// waitOrder finds Kustomizations that health-check a HelmRelease (wait:
// true, or a spec.healthChecks entry naming it) whose dependsOn chain
// reaches a HelmRelease another Kustomization applies, that they do not
// wait for. kustomize-controller v1.9.5 holds one of its --concurrent
// workers for the whole health check (kstatus: the HelmRelease is
// InProgress until Ready), and helm-controller v1.6.4 keeps the release
// DependencyNotReady until each dependency is Ready (checkDependencies):
// when the workers are all held by such checks, the Kustomization that
// would apply the missing release never gets one, and they all wait out
// their timeout. Seen on the sandbox with 30 such Kustomizations and the
// default --concurrent=4.
func waitOrder(env *fluxrepo.Env, g *fluxgraph.Graph) []finding {
	if !g.AppliersKnown {
		return nil
	}
	var fs []finding
	for _, k := range env.Kustomizations {
		kid := fluxgraph.ID(k.Kustomization, env.Options.Namespace)
		waits := settled(g, kid)
		missing := map[fluxgraph.NodeID][]string{}
		// need records that k's health check waits for release dep (for
		// hid) and walks on to dep's own dependencies — unless a
		// Kustomization k waits for health-checks dep: then dep is Ready,
		// and so are its dependencies, before k applies anything.
		var need func(hid, dep fluxgraph.NodeID, seen map[fluxgraph.NodeID]bool)
		need = func(hid, dep fluxgraph.NodeID, seen map[fluxgraph.NodeID]bool) {
			if seen[dep] {
				return
			}
			seen[dep] = true
			n := g.Nodes[dep]
			if n == nil || n.AppliedBy == (fluxgraph.NodeID{}) {
				return // not rendered: check.graph's [dangling]
			}
			if !waits[n.AppliedBy] {
				what := hid.Key().String()
				if dep != hid {
					what += " needs " + dep.Key().String()
				}
				missing[n.AppliedBy] = append(missing[n.AppliedBy], what)
			} else if by := env.Kustomization(n.AppliedBy.Namespace, n.AppliedBy.Name); by != nil && n.AppliedBy != kid && healthChecked(g, by, n.AppliedBy, dep) {
				return
			}
			for _, d := range n.DependsOn {
				need(hid, d, seen)
			}
		}
		for _, hid := range g.IDs {
			if hid.IsHelmRelease() && healthChecked(g, k, kid, hid) {
				need(hid, hid, map[fluxgraph.NodeID]bool{})
			}
		}
		for _, by := range slices.SortedFunc(maps.Keys(missing), func(a, b fluxgraph.NodeID) int { return strings.Compare(a.String(), b.String()) }) {
			if slices.Contains(g.Upstream(by), kid) {
				// by waits for k: it applies nothing before k is Ready, and k
				// is not Ready before by applied them.
				fs = append(fs, at(k.Location, verify.Finding{Detector: WaitOrder,
					Message: fmt.Sprintf("Kustomization %s health-checks HelmReleases that need releases Kustomization %s applies (%s), and %s waits for %s: a deadlock — %s's health check fails at its timeout and %s never applies", k.Ref(), by, strings.Join(missing[by], ", "), by, k.Ref(), k.Ref(), by),
					Fix:     fmt.Sprintf("apply those dependencies in %s or a Kustomization it depends on, or apply the dependent HelmReleases from %s (or a Kustomization after it)", k.Ref(), by)}))
				continue
			}
			fs = append(fs, at(k.Location, verify.Finding{Detector: WaitOrder, Verdict: verify.Warn,
				Message: fmt.Sprintf("Kustomization %s health-checks HelmReleases that need releases Kustomization %s applies (%s), without depending on %s: it holds one of kustomize-controller's --concurrent workers until they are Ready, and when every worker is held so, %s never gets one to apply them — the health checks wait out their timeout", k.Ref(), by, strings.Join(missing[by], ", "), by, by),
				Fix:     fmt.Sprintf("add dependsOn: [%s] to Kustomization %s (%s)", dependsOnEntry(by, k.Namespace), k.Ref(), k.Location)}))
		}
	}
	return fs
}

// healthChecked says kustomize-controller health-checks HelmRelease hid
// in Kustomization k's reconcile (kustomize-controller v1.9.5 checkHealth):
// under wait: true every object k applies, and only those; otherwise the
// spec.healthChecks entries, matched as given
// (inventory.ReferenceToObjMetadataSet defaults no namespace).
func healthChecked(g *fluxgraph.Graph, k *fluxrepo.Kustomization, kid, hid fluxgraph.NodeID) bool {
	if k.Spec.Wait {
		n := g.Nodes[hid]
		return n != nil && n.AppliedBy == kid
	}
	for _, h := range k.Spec.HealthChecks {
		if h.Kind == fluxobj.HelmReleaseKind && h.Name == hid.Name && h.Namespace == hid.Namespace {
			return true
		}
	}
	return false
}

// settled is what is in place before Kustomization kid applies anything:
// kid itself, everything it waits for (Upstream), and the chain of
// Kustomizations that apply it, with what they wait for — a release one of
// those applied went out in the apply that created kid.
func settled(g *fluxgraph.Graph, kid fluxgraph.NodeID) map[fluxgraph.NodeID]bool {
	out := map[fluxgraph.NodeID]bool{}
	for id := kid; id != (fluxgraph.NodeID{}) && !out[id]; {
		out[id] = true
		for _, u := range g.Upstream(id) {
			out[u] = true
		}
		n := g.Nodes[id]
		if n == nil {
			break
		}
		id = n.AppliedBy
	}
	return out
}
