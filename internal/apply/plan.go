package apply

import (
	"context"
	"fmt"
	"slices"

	"github.com/fluxcd/pkg/ssa"
	ssautils "github.com/fluxcd/pkg/ssa/utils"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/kube"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// PlanOptions tune Plan.
type PlanOptions struct {
	// Migrating are CRDs being migrated: they cannot be dry-run before
	// their migration and are planned as configured.
	Migrating []Dropped
	// NewNamespaces were absent when the before-gates read them, and this
	// run holds the cluster lock since (which may have created them): they
	// hold none of the objects, so nothing in them is read.
	NewNamespaces []string
}

// Plan asks the API server, with server-side dry runs, what an apply would
// do to each object, which workloads would restart, and which objects
// another field manager owns now. An object the live read shows absent is
// planned as created without a dry run.
func Plan(ctx context.Context, cl *Cluster, objs []*unstructured.Unstructured, po PlanOptions) ([]verify.ObjectChange, error) {
	nsExists := map[string]bool{}
	for _, ns := range po.NewNamespaces {
		nsExists[ns] = false
	}
	for _, o := range objs {
		ns := o.GetNamespace()
		if _, done := nsExists[ns]; ns == "" || done {
			continue
		}
		err := cl.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("plan: read namespace %s: %w", ns, err)
		}
		nsExists[ns] = err == nil
	}
	// The live objects come from one list per kind where that can be, and
	// ssa's diff reads them from there too: the dry run is the one request
	// left per object.
	live := ReadLive(ctx, cl.Client, objs, func(ns string) bool { return !nsExists[ns] })
	mgr := kube.ResourceManager(live.Reader())
	// Each object is planned on its own: a bounded number at once, so a
	// re-run's wall time is a few round trips, not one per object.
	out := make([]verify.ObjectChange, len(objs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(planConcurrency)
	for i, o := range objs {
		g.Go(func() error {
			// A new namespace's own object was absent too: the lock's
			// create since then is taken over by the apply.
			present := nsExists[o.GetNamespace()] || o.GetNamespace() == ""
			if ssautils.IsNamespace(o) && slices.Contains(po.NewNamespaces, o.GetName()) {
				present = false
			}
			oc, err := planOne(gctx, live, mgr, o, po.Migrating, present)
			out[i] = oc
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// planConcurrency bounds the plan's requests in flight.
const planConcurrency = 8

// planOne plans one object; nsExists false plans it created unread.
func planOne(ctx context.Context, lv *Live, mgr *ssa.ResourceManager, o *unstructured.Unstructured, migrating []Dropped, nsExists bool) (verify.ObjectChange, error) {
	oc := verify.ObjectChange{Object: ID(o)}
	if !nsExists {
		// Nothing to dry-run against: the namespace comes first.
		oc.Action = ssa.CreatedAction
		return oc, nil
	}
	live, err := lv.Get(ctx, o)
	if err != nil {
		return oc, fmt.Errorf("plan: read %s: %w", oc.Object, err)
	}
	if live == nil {
		oc.Action = ssa.CreatedAction
		return oc, nil
	}
	oc.TakenOverFrom = otherManagers(live)
	if slices.ContainsFunc(migrating, func(d Dropped) bool { return d.CRD.GetName() == o.GetName() && o.GetKind() == d.CRD.GetKind() }) {
		oc.Action = ssa.ConfiguredAction
		return oc, nil
	}
	entry, _, merged, err := mgr.Diff(ctx, o.DeepCopy(), ssa.DefaultDiffOptions())
	if err != nil {
		return oc, fmt.Errorf("plan: server-side dry run of %s: %w", oc.Object, err)
	}
	oc.Action = entry.Action
	if entry.Action == ssa.ConfiguredAction && o.GetKind() == "Deployment" && merged != nil {
		before, _, _ := unstructured.NestedMap(live.Object, "spec", "template")
		after, _, _ := unstructured.NestedMap(merged.Object, "spec", "template")
		oc.Restarts = !equality.Semantic.DeepEqual(before, after)
	}
	return oc, nil
}

// Changed reports whether a plan or outcome changes anything.
func Changed(changes []verify.ObjectChange) bool { return verify.Changed(changes) }
