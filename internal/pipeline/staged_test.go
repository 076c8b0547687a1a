package pipeline

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func obj(apiVersion, kind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// TestStaged: a later phase finds what an earlier one staged by group,
// kind, namespace and name (any version), a re-staged object replaces the
// earlier one, and nothing else is found.
func TestStaged(t *testing.T) {
	var r Run
	ns := obj("v1", "Namespace", "", "flux-system")
	crd := obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "kustomizations.kustomize.toolkit.fluxcd.io")
	sec := obj("v1", "Secret", "flux-system", "sops-age")
	r.Stage(ns, crd, sec)
	sec2 := obj("v1", "Secret", "flux-system", "sops-age")
	sec2.SetLabels(map[string]string{"again": "yes"})
	r.Stage(sec2)
	for _, tt := range []struct {
		gk       schema.GroupKind
		ns, name string
		want     *unstructured.Unstructured
	}{
		{schema.GroupKind{Kind: "Namespace"}, "", "flux-system", ns},
		{schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}, "", "kustomizations.kustomize.toolkit.fluxcd.io", crd},
		{schema.GroupKind{Kind: "Secret"}, "flux-system", "sops-age", sec2},
		{schema.GroupKind{Kind: "Secret"}, "default", "sops-age", nil},
		{schema.GroupKind{Kind: "ConfigMap"}, "flux-system", "sops-age", nil},
	} {
		if got := r.Staged(tt.gk, tt.ns, tt.name); got != tt.want {
			t.Errorf("Staged(%v, %s, %s) = %v, want %v", tt.gk, tt.ns, tt.name, got, tt.want)
		}
	}
	if n := len(r.StagedOf(schema.GroupKind{Kind: "Secret"})); n != 1 {
		t.Errorf("StagedOf(Secret): %d, want 1 (re-staged replaces)", n)
	}
}
