package apply

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/fluxcd/pkg/ssa"
	ssautils "github.com/fluxcd/pkg/ssa/utils"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/homelab-ops/bootstrap/internal/gate"
	"github.com/homelab-ops/bootstrap/internal/wait"
)

// Apply server-side applies the objects the plan changes (created,
// configured, or taken over from another field manager) in stages (CRDs and
// namespaces first, waiting for them, then the rest) and returns what
// happened to each; objects the plan's dry run found unchanged are reported
// unchanged without a second dry run, so a no-op re-run costs no apply.
func Apply(ctx context.Context, cl *Cluster, objs []*unstructured.Unstructured, plan []gate.ObjectChange, timeout time.Duration) ([]gate.ObjectChange, error) {
	opts := applyOptions()
	opts.WaitTimeout = timeout
	var todo []*unstructured.Unstructured
	var out []gate.ObjectChange
	for _, o := range objs {
		i := slices.IndexFunc(plan, func(p gate.ObjectChange) bool { return p.Object == ID(o) })
		if i >= 0 && plan[i].Action == string(ssa.UnchangedAction) && len(plan[i].TakenOverFrom) == 0 {
			out = append(out, plan[i])
			continue
		}
		todo = append(todo, o)
	}
	if len(todo) == 0 {
		return out, nil
	}
	cs, err := applyStaged(ctx, cl, todo, opts, timeout)
	if cs != nil {
		for _, e := range cs.Entries {
			oc := gate.ObjectChange{Object: objectID(e.ObjMetadata.GroupKind.Kind, e.ObjMetadata.Namespace, e.ObjMetadata.Name), Action: string(e.Action)}
			if i := slices.IndexFunc(plan, func(p gate.ObjectChange) bool { return p.Object == oc.Object }); i >= 0 {
				oc.Restarts = plan[i].Restarts && e.Action == ssa.ConfiguredAction
				oc.TakenOverFrom = plan[i].TakenOverFrom
			}
			out = append(out, oc)
		}
	}
	if err != nil {
		return out, fmt.Errorf("server-side apply: %w", err)
	}
	return out, nil
}

// applyStaged is ssa's ApplyAllStaged (its stages, by its own predicates)
// with each stage's wait done by watch (wait.Established: one watch per CRD
// or namespace, by name) instead of ssa's 2 s poll: cluster definitions
// (CRDs, namespaces, cluster roles) first, then classes, each until its
// CRDs are established and its namespaces active, then the rest.
func applyStaged(ctx context.Context, cl *Cluster, objs []*unstructured.Unstructured, opts ssa.ApplyOptions, timeout time.Duration) (*ssa.ChangeSet, error) {
	var defs, classes, rest []*unstructured.Unstructured
	for _, o := range objs {
		switch {
		case ssautils.IsClusterDefinition(o):
			defs = append(defs, o)
		case ssautils.IsClassDefinition(o):
			classes = append(classes, o)
		default:
			rest = append(rest, o)
		}
	}
	changes := ssa.NewChangeSet()
	for _, stage := range []struct {
		objs []*unstructured.Unstructured
		wait bool
	}{{defs, true}, {classes, true}, {rest, false}} {
		if len(stage.objs) == 0 {
			continue
		}
		cs, err := cl.Manager.ApplyAll(ctx, stage.objs, opts)
		if cs != nil {
			changes.Append(cs.Entries)
		}
		if err != nil {
			return changes, err
		}
		if stage.wait {
			if err := wait.Established(ctx, cl.Client, stage.objs, timeout); err != nil {
				return changes, fmt.Errorf("before the objects that need them: %w", err)
			}
		}
	}
	return changes, nil
}

// Progress receives one line per status change while waiting.
type Progress = wait.Progress
