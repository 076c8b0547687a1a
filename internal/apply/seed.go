package apply

import (
	"context"
	"fmt"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/ssa"
	"github.com/fluxcd/pkg/ssa/normalize"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/kube"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// kustomizeOwner is kustomize-controller v1.9.5's ssa owner
// (internal/controller/kustomization_controller.go, apply:
// ssa.NewResourceManager(…, ssa.Owner{Field: r.ControllerName, Group:
// kustomizev1.GroupVersion.Group}), the controller name defaulting to
// "kustomize-controller" in main.go).
var kustomizeOwner = ssa.Owner{Field: KustomizeControllerManager, Group: kustomizev1.GroupVersion.Group}

// AsKustomization makes objs what Kustomization namespace/name applies:
// its owner labels (fluxcd/pkg/ssa ResourceManager.SetOwnerLabels:
// kustomize.toolkit.fluxcd.io/name and /namespace, as the controller sets
// them on every object it builds) and the controller's normalization
// before its apply (ssa/normalize.UnstructuredList: a Secret's stringData
// becomes data), so that the Kustomization's first apply of the same
// objects changes nothing and finds no other owner.
func AsKustomization(objs []*unstructured.Unstructured, namespace, name string) error {
	ssa.NewResourceManager(nil, nil, kustomizeOwner).SetOwnerLabels(objs, name, namespace)
	return normalize.UnstructuredList(objs)
}

// ApplyAsKustomizeController server-side applies objs (made by
// AsKustomization) with kustomize-controller's field manager, taking over
// this tool's and the imperative installs' fields: the objects a
// Kustomization will apply itself, written before its first reconcile
// (the seeds of the objects it substitutes from), so that it adopts them
// as its own with no drift and no second owner.
func ApplyAsKustomizeController(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) ([]verify.ObjectChange, error) {
	rm := ssa.NewResourceManager(c, nil, kustomizeOwner)
	opts := applyOptions()
	for _, op := range []metav1.ManagedFieldsOperationType{metav1.ManagedFieldsOperationApply, metav1.ManagedFieldsOperationUpdate} {
		opts.Cleanup.FieldManagers = append(opts.Cleanup.FieldManagers, ssa.FieldManager{Name: kube.FieldManager, OperationType: op})
	}
	cs, err := rm.ApplyAll(ctx, objs, opts)
	var out []verify.ObjectChange
	if cs != nil {
		for _, e := range cs.Entries {
			out = append(out, verify.ObjectChange{Object: objectID(e.ObjMetadata.GroupKind.Kind, e.ObjMetadata.Namespace, e.ObjMetadata.Name), Action: e.Action})
		}
	}
	if err != nil {
		return out, fmt.Errorf("server-side apply as %s: %w", KustomizeControllerManager, err)
	}
	return out, nil
}

// Normalize is kustomize-controller's normalization of one object before
// its apply (ssa/normalize.Unstructured: a Secret's stringData becomes
// data).
func Normalize(u *unstructured.Unstructured) error { return normalize.Unstructured(u) }
