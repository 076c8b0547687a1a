package apply

import (
	"context"
	"fmt"
	"slices"

	"github.com/fluxcd/pkg/ssa"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// installKinds are the kinds a Flux install consists of. The namespace is
// never pruned: it holds the user's sources and Kustomizations.
var installKinds = []schema.GroupVersionKind{
	{Group: "apps", Version: "v1", Kind: "Deployment"},
	{Version: "v1", Kind: "Service"},
	{Version: "v1", Kind: "ServiceAccount"},
	{Version: "v1", Kind: "ResourceQuota"},
	{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"},
	{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"},
}

// Stale is what an earlier install left that this render no longer has.
type Stale struct {
	// Delete are the objects to prune.
	Delete []*unstructured.Unstructured
	// Kept are CRDs that still have custom resources; deleting them would
	// delete those too, so they need --prune-crds.
	Kept []string
}

// FindStale lists the objects labelled as this Flux install
// (app.kubernetes.io/part-of=flux, app.kubernetes.io/instance=<namespace>,
// as flux install and manifestgen label them) that the render lacks.
func FindStale(ctx context.Context, cl *Cluster, objs []*unstructured.Unstructured, namespace string, pruneCRDs bool) (*Stale, error) {
	want := map[string]bool{}
	for _, o := range objs {
		want[ID(o)] = true
	}
	sel := client.MatchingLabels{"app.kubernetes.io/part-of": "flux", "app.kubernetes.io/instance": namespace}
	out := &Stale{}
	for _, gvk := range installKinds {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := cl.Client.List(ctx, list, sel); err != nil {
			if meta.IsNoMatchError(err) {
				continue
			}
			return nil, fmt.Errorf("list %s of the earlier install: %w", gvk.Kind, err)
		}
		for _, item := range list.Items {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			u.SetNamespace(item.Namespace)
			u.SetName(item.Name)
			if want[ID(u)] || item.DeletionTimestamp != nil {
				continue
			}
			if gvk.Kind == "CustomResourceDefinition" && !pruneCRDs {
				n, err := customResources(ctx, cl, item.Name)
				if err != nil {
					return nil, err
				}
				if n > 0 {
					out.Kept = append(out.Kept, fmt.Sprintf("CustomResourceDefinition/%s: %d custom resource(s) exist", item.Name, n))
					continue
				}
			}
			out.Delete = append(out.Delete, u)
		}
	}
	return out, nil
}

// customResources counts (up to a page) the objects of a CRD.
func customResources(ctx context.Context, cl *Cluster, name string) (int, error) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := cl.Client.Get(ctx, client.ObjectKey{Name: name}, &crd); err != nil {
		return 0, client.IgnoreNotFound(err)
	}
	i := slices.IndexFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Served })
	if i < 0 {
		return 0, nil
	}
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: crd.Spec.Versions[i].Name, Resource: crd.Spec.Names.Plural}
	list, err := cl.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 100})
	if err != nil {
		return 0, fmt.Errorf("count %s: %w", gvr, err)
	}
	return len(list.Items), nil
}

// PlanStale adds the prune to a plan.
func PlanStale(plan []verify.ObjectChange, s *Stale) []verify.ObjectChange {
	for _, o := range s.Delete {
		plan = append(plan, verify.ObjectChange{Object: ID(o), Action: ssa.DeletedAction})
	}
	return plan
}

// Prune deletes the stale objects with ssa and returns what happened.
func Prune(ctx context.Context, cl *Cluster, s *Stale) ([]verify.ObjectChange, error) {
	if len(s.Delete) == 0 {
		return nil, nil
	}
	cs, err := cl.Manager.DeleteAll(ctx, s.Delete, ssa.DefaultDeleteOptions())
	var out []verify.ObjectChange
	if cs != nil {
		for _, e := range cs.Entries {
			out = append(out, verify.ObjectChange{Object: objectID(e.ObjMetadata.GroupKind.Kind, e.ObjMetadata.Namespace, e.ObjMetadata.Name), Action: e.Action})
		}
	}
	if err != nil {
		return out, fmt.Errorf("prune the earlier install's leftovers: %w", err)
	}
	return out, nil
}
