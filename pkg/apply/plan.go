package apply

import (
	"context"
	"fmt"
	"slices"

	"github.com/fluxcd/pkg/ssa"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/pkg/gate"
)

// Plan asks the API server, with server-side dry runs, what an apply would
// do to each object, which workloads would restart, and which objects
// another field manager owns now. CRDs being migrated cannot be dry-run
// before their migration; they are planned as configured.
func Plan(ctx context.Context, cl *Cluster, objs []*unstructured.Unstructured, migrating []Dropped) ([]gate.ObjectChange, error) {
	nsExists := map[string]bool{}
	var out []gate.ObjectChange
	for _, o := range objs {
		oc := gate.ObjectChange{Object: ID(o)}
		if ns := o.GetNamespace(); ns != "" {
			exists, ok := nsExists[ns]
			if !ok {
				err := cl.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
				if err != nil && !apierrors.IsNotFound(err) {
					return nil, fmt.Errorf("plan: read namespace %s: %w", ns, err)
				}
				exists = err == nil
				nsExists[ns] = exists
			}
			if !exists {
				// Nothing to dry-run against: the namespace comes first.
				oc.Action = string(ssa.CreatedAction)
				out = append(out, oc)
				continue
			}
		}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(o.GroupVersionKind())
		err := cl.Client.Get(ctx, client.ObjectKeyFromObject(o), live)
		if apierrors.IsNotFound(err) {
			oc.Action = string(ssa.CreatedAction)
			out = append(out, oc)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("plan: read %s: %w", oc.Object, err)
		}
		oc.TakenOverFrom = otherManagers(live)
		if slices.ContainsFunc(migrating, func(d Dropped) bool { return d.CRD.GetName() == o.GetName() && o.GetKind() == d.CRD.GetKind() }) {
			oc.Action = string(ssa.ConfiguredAction)
			out = append(out, oc)
			continue
		}
		entry, _, merged, err := cl.Manager.Diff(ctx, o.DeepCopy(), ssa.DefaultDiffOptions())
		if err != nil {
			return nil, fmt.Errorf("plan: server-side dry run of %s: %w", oc.Object, err)
		}
		oc.Action = string(entry.Action)
		if entry.Action == ssa.ConfiguredAction && o.GetKind() == "Deployment" && merged != nil {
			before, _, _ := unstructured.NestedMap(live.Object, "spec", "template")
			after, _, _ := unstructured.NestedMap(merged.Object, "spec", "template")
			oc.Restarts = !equality.Semantic.DeepEqual(before, after)
		}
		out = append(out, oc)
	}
	return out, nil
}

// Changed reports whether a plan or outcome changes anything.
func Changed(changes []gate.ObjectChange) bool { return gate.Changed(changes) }
