package check

import (
	"fmt"
	"strings"

	"github.com/homelab-ops/bootstrap/internal/fluxgraph"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// detRootWait is the [root-wait] row of the table of detectors.
var detRootWait = detector{ID: RootWait, Gate: Graph, Advisory: false,
	Short: "root Kustomization whose health check waits for a Kustomization that depends on it: a deadlock",
	Rule:  "kustomize-controller v1.9.5 checkHealth (wait: true or spec.healthChecks) and checkDependencies (DependencyNotReady); fluxgraph.RootWaiters",
	graph: rootWait,
}

// rootWait runs rootWaitFindings on the environment's root.
func rootWait(gs *graphScan) []finding {
	if gs.root == nil {
		return nil
	}
	return rootWaitFindings(gs.env, gs.g, gs.rootRef)
}

// rootWaitFindings is [root-wait]: the root health-checks (wait: true, or
// spec.healthChecks) Kustomizations that wait for it through dependsOn —
// kustomize-controller leaves the Kustomization itself out of its own
// health check, so only those are a deadlock (fluxgraph.RootWaiters).
func rootWaitFindings(env *fluxrepo.Env, g *fluxgraph.Graph, rootRef string) []finding {
	root := env.Root
	if direct, through := fluxgraph.RootWaiters(env, g); len(direct)+len(through) > 0 {
		// wait: true, or (without it) spec.healthChecks naming them.
		how, field, fix := "has wait: true: it health-checks", "wait", "set wait: false on the root (it is then Ready on apply)"
		if !root.Spec.Wait {
			how, field, fix = "names in spec.healthChecks", "healthChecks", "drop those entries from the root's spec.healthChecks"
		}
		what := fmt.Sprintf("the root Kustomization %s %s Kustomization %s, which depend(s) on it", rootRef, how, strings.Join(direct, ", "))
		if len(direct) == 0 {
			what = fmt.Sprintf("the root Kustomization %s %s Kustomization %s, which wait(s) for it through dependsOn", rootRef, how, strings.Join(through, ", "))
		} else if len(through) > 0 {
			what += fmt.Sprintf(" (and %s, through dependsOn)", strings.Join(through, ", "))
		}
		if len(direct) > 0 {
			fix += fmt.Sprintf(", or drop the dependsOn on %s from %s", rootRef, strings.Join(direct, ", "))
		}
		return []finding{at(fieldLocation(env, root.Location, "spec", field), verify.Finding{Detector: RootWait, Fix: fix,
			Message: what + " — a deadlock: the root is not Ready until they are, and they wait for the root (DependencyNotReady) until its health check fails at its timeout"})}
	}
	return nil
}
