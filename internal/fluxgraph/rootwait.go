package fluxgraph

import (
	"slices"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
)

// RootWaiters lists the Kustomizations that make a root with wait: true
// (or spec.healthChecks naming a Kustomization) deadlock: those its health check waits for that wait for the root —
// direct: their dependsOn names it; through: a dependsOn chain reaches it.
// kustomize-controller v1.9.5 (kustomization_controller.go checkHealth)
// health-checks, under wait: true, every object the apply's change set
// holds (the objects the Kustomization applies, skipped ones left out) —
// except itself ("Guard against deadlock (waiting on itself)"), so a root
// applying its own Kustomization does not wait for itself; a Kustomization
// child is healthy when Ready (kstatus), and one that is itself wait: true
// (or names a Kustomization in spec.healthChecks) is not Ready before what
// it checks is. checkDependencies keeps a Kustomization whose dependsOn
// chain reaches the root DependencyNotReady until the root is Ready. Only
// when both meet is it a deadlock; a root nothing so depends on is Ready
// once its health check passes.
func RootWaiters(env *fluxrepo.Env, g *Graph) (direct, through []string) {
	root := env.Root
	if root == nil || (!root.Spec.Wait && len(root.Spec.HealthChecks) == 0) || !g.AppliersKnown {
		return nil, nil
	}
	rid := ID(root.Kustomization, env.Options.Namespace)
	checked := map[NodeID]bool{}
	// The root's health check: what it applies; then, through every
	// Kustomization that is checked and itself waits, what that one
	// checks.
	queue := []NodeID{rid}
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		k := env.Kustomization(x.Namespace, x.Name)
		if k == nil {
			continue
		}
		for _, id := range g.IDs {
			if id.IsHelmRelease() || id == x || id == rid || checked[id] {
				continue
			}
			n := g.Nodes[id]
			if !kustomizationChecked(k, x, id, n) {
				continue
			}
			checked[id] = true
			queue = append(queue, id)
		}
	}
	for _, id := range g.IDs {
		if !checked[id] || !slices.Contains(g.Upstream(id), rid) {
			continue
		}
		if slices.Contains(g.Nodes[id].DependsOn, rid) {
			direct = append(direct, id.String())
		} else {
			through = append(through, id.String())
		}
	}
	return direct, through
}

// kustomizationChecked says Kustomization k (node kid) health-checks
// Kustomization id: under wait: true every object it applies, otherwise
// a spec.healthChecks entry naming it (namespace as given:
// inventory.ReferenceToObjMetadataSet defaults none).
func kustomizationChecked(k *fluxrepo.Kustomization, kid, id NodeID, n *Node) bool {
	if k.Spec.Wait {
		return n != nil && n.AppliedBy == kid
	}
	for _, h := range k.Spec.HealthChecks {
		if h.Kind == kustomizev1.KustomizationKind && h.Name == id.Name && h.Namespace == id.Namespace {
			return true
		}
	}
	return false
}
