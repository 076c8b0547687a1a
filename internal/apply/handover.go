package apply

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/fluxcd/pkg/ssa"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/kube"
)

// KustomizeControllerManager is kustomize-controller's server-side apply
// field manager (its --controller-name default, v1.9.5 main.go).
const KustomizeControllerManager = "kustomize-controller"

// HandOver transfers this tool's field ownership of each object to
// kustomize-controller's manager, merging the fields as kustomize-controller
// itself merges kubectl's before every apply (kustomization_controller.go,
// applyOpts.Cleanup, with fluxcd/pkg/ssa's PatchReplaceFieldsManagers).
//
// Why: the cluster root is applied here and then by the root
// Kustomization. Left co-owned, a field later removed from Git is never
// removed from the cluster — each manager's apply keeps it while the other
// still owns it (kubernetes/kubernetes#99003) — and kustomize-controller
// takes over kubectl's fields but not this tool's. After the hand-over it is
// the one owner, so the next revision's apply removes what Git removed, as
// after `kubectl apply -k`.
//
// skip names objects kustomize-controller does not apply (a temporary
// source with reconcile: disabled); they stay this tool's. It returns how
// many objects changed owner.
func HandOver(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, skip func(live *unstructured.Unstructured) bool) (int, error) {
	ours := []ssa.FieldManager{
		{Name: kube.FieldManager, OperationType: metav1.ManagedFieldsOperationApply},
		{Name: kube.FieldManager, OperationType: metav1.ManagedFieldsOperationUpdate},
	}
	n := 0
	for _, o := range objs {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(o.GroupVersionKind())
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), live); err != nil {
			return n, fmt.Errorf("hand %s over to kustomize-controller: %w", ID(o), err)
		}
		if skip != nil && skip(live) {
			continue
		}
		patches, err := ssa.PatchReplaceFieldsManagers(live, ours, KustomizeControllerManager)
		if err != nil {
			return n, fmt.Errorf("hand %s over to kustomize-controller: %w", ID(o), err)
		}
		if len(patches) == 0 {
			continue
		}
		raw, err := json.Marshal(patches)
		if err != nil {
			return n, err
		}
		if err := c.Patch(ctx, live, client.RawPatch(types.JSONPatchType, raw)); err != nil {
			return n, fmt.Errorf("hand %s over to kustomize-controller: %w", ID(o), err)
		}
		n++
	}
	return n, nil
}

// OwnedBy lists the managedFields entries of obj that manager holds, as
// "manager/Operation", so a gate can prove a hand-over left none.
func OwnedBy(obj metav1.Object, manager string) []string {
	var out []string
	for _, m := range obj.GetManagedFields() {
		if m.Manager == manager {
			out = append(out, m.Manager+"/"+string(m.Operation))
		}
	}
	return out
}
