package converge

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/pkg/patches"
)

// liveControllers is what the walk reads of the running controllers'
// flags, from their live Deployments: how helm-controller reads a
// dependsOn readyExpr, and how long each controller leaves a dependent
// blocked on its dependencies before it checks them again
// (--requeue-dependency: nothing else wakes it, which is what a nudge
// saves).
type liveControllers struct {
	additiveCEL bool
	// requeue is "<controller> <duration>" per controller read, with
	// "(default)" when no arg sets it and the reason when it was not read.
	requeue []string
}

func (l liveControllers) requeueText() string { return strings.Join(l.requeue, ", ") }

// readControllers reads kustomize-controller's and (when the graph holds
// HelmReleases) helm-controller's Deployments in the root's namespace. A
// Deployment it cannot read leaves helm-controller's AdditiveCELDependency
// Check off (its default) and says so in the requeue text.
func (p *Phase) readControllers(ctx context.Context) liveControllers {
	ns := p.o.Root.Namespace
	if ns == "" {
		ns = fluxobj.DefaultNamespace
	}
	names := []string{"kustomize-controller"}
	if p.hasHelmReleases() {
		names = append(names, "helm-controller")
	}
	var out liveControllers
	for _, name := range names {
		var dep appsv1.Deployment
		if err := p.cl.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &dep); err != nil {
			out.requeue = append(out.requeue, fmt.Sprintf("%s unknown (Deployment %s/%s not read: %v)", name, ns, name, err))
			continue
		}
		f, err := patches.ManagerFlags(&dep)
		if err != nil {
			out.requeue = append(out.requeue, fmt.Sprintf("%s unknown (%v)", name, err))
			continue
		}
		switch d, explicit, err := fluxobj.RequeueDependency(f); {
		case err != nil:
			out.requeue = append(out.requeue, fmt.Sprintf("%s unknown (%v)", name, err))
		case explicit:
			out.requeue = append(out.requeue, fmt.Sprintf("%s %s", name, d))
		default:
			out.requeue = append(out.requeue, fmt.Sprintf("%s %s (default)", name, d))
		}
		if name == "helm-controller" {
			out.additiveCEL = patches.EffectiveGate(name, patches.ImageVersion(patches.ManagerImage(&dep)), f, fluxobj.AdditiveCELDependencyCheck).Value
		}
	}
	return out
}
