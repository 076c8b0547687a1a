package fluxobj

import (
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRevisionGated: kustomize-controller v1.9.4
// internal/controller/kustomization_controller.go checkDependencies
// compares the dependency's "revision is not up to date" only when
// dependent and dependency read the same source kind, namespace (each
// defaulted to its own Kustomization's) and name. Negative cases: a
// different name, namespace or kind is not gated.
func TestRevisionGated(t *testing.T) {
	ks := func(ns, kind, srcNS, name string) Ref {
		k := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "k"}}
		k.Spec.SourceRef = kustomizev1.CrossNamespaceSourceReference{Kind: kind, Namespace: srcNS, Name: name}
		return KustomizationSource(k)
	}
	for _, tc := range []struct {
		name     string
		dep, dcy Ref
		want     bool
	}{
		{"same source", ks("flux-system", GitRepositoryKind, "", "flux-system"), ks("flux-system", GitRepositoryKind, "", "flux-system"), true},
		{"same source, one namespace spelled out", ks("flux-system", GitRepositoryKind, "flux-system", "flux-system"), ks("flux-system", GitRepositoryKind, "", "flux-system"), true},
		{"another name", ks("flux-system", GitRepositoryKind, "", "flux-system"), ks("flux-system", GitRepositoryKind, "", "shared"), false},
		{"defaulted to another namespace", ks("apps", GitRepositoryKind, "", "flux-system"), ks("flux-system", GitRepositoryKind, "", "flux-system"), false},
		{"another kind", ks("flux-system", GitRepositoryKind, "", "flux-system"), ks("flux-system", OCIRepositoryKind, "", "flux-system"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RevisionGated(tc.dep, tc.dcy); got != tc.want {
				t.Errorf("RevisionGated(%s, %s) = %t, want %t", tc.dep, tc.dcy, got, tc.want)
			}
		})
	}
}
