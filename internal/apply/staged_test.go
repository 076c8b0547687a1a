package apply

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func crdObj(name, group, kind string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"group": group, "names": map[string]any{"kind": kind}},
	}}
}

func obj(apiVersion, kind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// TestNeededBy: a later stage waits only for the CRDs of its kinds and the
// namespaces it applies into; the rest is waited for alongside.
func TestNeededBy(t *testing.T) {
	stage := []*unstructured.Unstructured{
		crdObj("gitrepositories.source.toolkit.fluxcd.io", "source.toolkit.fluxcd.io", "GitRepository"),
		crdObj("buckets.source.toolkit.fluxcd.io", "source.toolkit.fluxcd.io", "Bucket"),
		obj("v1", "Namespace", "", "flux-system"),
		obj("v1", "Namespace", "", "unused"),
		obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "flux-view"),
	}
	later := []*unstructured.Unstructured{
		obj("source.toolkit.fluxcd.io/v1", "GitRepository", "flux-system", "flux-system"),
		obj("apps/v1", "Deployment", "flux-system", "source-controller"),
	}
	now, rest := neededBy(stage, later)
	names := func(objs []*unstructured.Unstructured) []string {
		var out []string
		for _, o := range objs {
			out = append(out, o.GetName())
		}
		return out
	}
	if got := names(now); len(got) != 2 || got[0] != "gitrepositories.source.toolkit.fluxcd.io" || got[1] != "flux-system" {
		t.Errorf("waited for first: %v, want the GitRepository CRD and flux-system", got)
	}
	if got := names(rest); len(got) != 3 || got[0] != "buckets.source.toolkit.fluxcd.io" || got[1] != "unused" || got[2] != "flux-view" {
		t.Errorf("waited for alongside: %v, want the Bucket CRD, unused and the ClusterRole", got)
	}
}
