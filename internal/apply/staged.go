package apply

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/fluxcd/cli-utils/pkg/object"
	"github.com/fluxcd/pkg/ssa"
	ssautils "github.com/fluxcd/pkg/ssa/utils"
	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/kube"
	"github.com/homelab-ops/bootstrap/internal/wait"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// Apply server-side applies the objects the plan changes (created,
// configured, or taken over from another field manager) in stages (CRDs and
// namespaces first, waiting for them, then the rest) and returns what
// happened to each; objects the plan's dry run found unchanged are reported
// unchanged without a second dry run, so a no-op re-run costs no apply, and
// objects the plan found absent cost one request each (see create).
func Apply(ctx context.Context, cl *Cluster, objs []*unstructured.Unstructured, plan []verify.ObjectChange, timeout time.Duration) ([]verify.ObjectChange, error) {
	opts := applyOptions()
	opts.WaitTimeout = timeout
	var todo []*unstructured.Unstructured
	var out []verify.ObjectChange
	absent := map[string]bool{}
	for _, o := range objs {
		i := slices.IndexFunc(plan, func(p verify.ObjectChange) bool { return p.Object == ID(o) })
		if i >= 0 && plan[i].Action == ssa.UnchangedAction && len(plan[i].TakenOverFrom) == 0 {
			out = append(out, plan[i])
			continue
		}
		if i >= 0 && plan[i].Action == ssa.CreatedAction {
			absent[ID(o)] = true
		}
		todo = append(todo, o)
	}
	if len(todo) == 0 {
		return out, nil
	}
	cs, err := stagedApply(ctx, cl, todo, absent, opts, timeout)
	if cs != nil {
		for _, e := range cs.Entries {
			oc := verify.ObjectChange{Object: objectID(e.ObjMetadata.GroupKind.Kind, e.ObjMetadata.Namespace, e.ObjMetadata.Name), Action: e.Action}
			if i := slices.IndexFunc(plan, func(p verify.ObjectChange) bool { return p.Object == oc.Object }); i >= 0 {
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

// stagedApply is applyStaged; the benchmark's build (bench_upstream.go)
// swaps in ssa's ApplyAllStaged to measure the fork against it.
var stagedApply = applyStaged

// applyStaged is ssa's ApplyAllStaged (its stages, by its own predicates)
// with each stage's wait done by watch (wait.Established: one watch for a
// kind's labelled CRDs or namespaces) instead of ssa's 2 s poll: cluster
// definitions (CRDs, namespaces, cluster roles) first, then classes, then
// the rest. A later stage waits only for the CRDs whose kinds it applies
// and the namespaces it applies into; every other CRD and namespace is
// waited for alongside the later stages, and the apply returns once all
// are established. Within a stage, the objects the plan found absent are
// created (create) and the others go through ssa's ApplyAll. Kept over
// ApplyAllStaged for the requests create saves on a fresh install (151 →
// 72 on step 1, measured side by side: docs/benchmarks.md, "The forks").
func applyStaged(ctx context.Context, cl *Cluster, objs []*unstructured.Unstructured, absent map[string]bool, opts ssa.ApplyOptions, timeout time.Duration) (*ssa.ChangeSet, error) {
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
	var alongside errgroup.Group
	defer func() { _ = alongside.Wait() }() // an early return cancels them first
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	changes := ssa.NewChangeSet()
	stages := [][]*unstructured.Unstructured{defs, classes, rest}
	for i, stage := range stages {
		if len(stage) == 0 {
			continue
		}
		if err := applyStage(ctx, cl, stage, absent, opts, changes); err != nil {
			return changes, err
		}
		if i == len(stages)-1 {
			break
		}
		now, later := neededBy(stage, slices.Concat(stages[i+1:]...))
		if err := wait.Established(ctx, cl.Client, now, timeout); err != nil {
			return changes, fmt.Errorf("before the objects that need them: %w", err)
		}
		alongside.Go(func() error { return wait.Established(ctx, cl.Client, later, timeout) })
	}
	if err := alongside.Wait(); err != nil {
		return changes, fmt.Errorf("after the apply: %w", err)
	}
	return changes, nil
}

// applyStage applies one stage's objects, adding what happened to changes.
func applyStage(ctx context.Context, cl *Cluster, stage []*unstructured.Unstructured, absent map[string]bool, opts ssa.ApplyOptions, changes *ssa.ChangeSet) error {
	var fresh, other []*unstructured.Unstructured
	for _, o := range stage {
		if absent[ID(o)] {
			fresh = append(fresh, o)
		} else {
			other = append(other, o)
		}
	}
	created, err := create(ctx, cl, fresh)
	changes.Append(created)
	if err != nil || len(other) == 0 {
		return err
	}
	cs, err := cl.Manager.ApplyAll(ctx, other, opts)
	if cs != nil {
		changes.Append(cs.Entries)
	}
	return err
}

// neededBy splits a stage into the CRDs and namespaces that later objects
// need first (a CRD defining one of their kinds, a namespace holding one of
// them) and everything else.
func neededBy(stage, later []*unstructured.Unstructured) (now, rest []*unstructured.Unstructured) {
	kinds, namespaces := map[schema.GroupKind]bool{}, map[string]bool{}
	for _, o := range later {
		kinds[o.GroupVersionKind().GroupKind()] = true
		namespaces[o.GetNamespace()] = true
	}
	for _, o := range stage {
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
		switch {
		case ssautils.IsCRD(o) && kinds[schema.GroupKind{Group: group, Kind: kind}],
			ssautils.IsNamespace(o) && namespaces[o.GetName()]:
			now = append(now, o)
		default:
			rest = append(rest, o)
		}
	}
	return now, rest
}

// create server-side applies objects the plan's live read found absent:
// one request each, a bounded number at once. ssa's ApplyAll would read
// each again (absent), dry-run it (created), and apply them one after
// another; the read and the dry run would tell nothing the plan did not.
// It returns the entries of the objects it applied. An object someone
// created since the plan is taken over by the same forced apply; the
// foreign managers ApplyAll would clean from it are cleaned by the next
// run, whose plan finds it present.
func create(ctx context.Context, cl *Cluster, objs []*unstructured.Unstructured) ([]ssa.ChangeSetEntry, error) {
	done := make([]*ssa.ChangeSetEntry, len(objs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(planConcurrency)
	for i, o := range objs {
		g.Go(func() error {
			obj := o.DeepCopy()
			ssautils.RemoveCABundleFromCRD(obj) // as ApplyAll does
			err := cl.Client.Apply(gctx, client.ApplyConfigurationFromUnstructured(obj), client.ForceOwnership, client.FieldOwner(kube.FieldManager))
			if err != nil {
				return fmt.Errorf("%s apply failed: %w", ssautils.FmtUnstructured(o), err)
			}
			done[i] = &ssa.ChangeSetEntry{ObjMetadata: object.UnstructuredToObjMetadata(o), GroupVersion: o.GroupVersionKind().GroupVersion().String(),
				Subject: ssautils.FmtUnstructured(o), Action: ssa.CreatedAction}
			return nil
		})
	}
	err := g.Wait()
	var out []ssa.ChangeSetEntry
	for _, e := range done {
		if e != nil {
			out = append(out, *e)
		}
	}
	return out, err
}

// Progress receives one line per status change while waiting.
type Progress = wait.Progress
