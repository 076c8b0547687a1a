package crdschema

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/homelab-ops/bootstrap/pkg/components"
)

// TestFromObjects: the Validator built from a release's CRDs as a render
// holds them (unstructured, among other kinds) judges a Kustomization as
// the release's own Validator does: a valid one passes, one with a
// misspelled required field is refused, a kind of no CRD among them is
// not judged.
func TestFromObjects(t *testing.T) {
	b, err := components.EmbeddedBundle("v2.9.5")
	if err != nil {
		t.Fatal(err)
	}
	crds, err := b.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	objs := []*unstructured.Unstructured{{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "flux-system"}}}}
	for i := range crds {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&crds[i])
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: m}
		u.SetAPIVersion("apiextensions.k8s.io/v1")
		u.SetKind("CustomResourceDefinition")
		objs = append(objs, u)
	}
	v, err := FromObjects(objs, "the render")
	if err != nil {
		t.Fatal(err)
	}
	ks := func(spec string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: apps, namespace: flux-system}\nspec:\n"+spec), &u.Object); err != nil {
			t.Fatal(err)
		}
		return u
	}
	for _, tt := range []struct {
		name      string
		obj       *unstructured.Unstructured
		known, ok bool
	}{
		{"valid", ks("  interval: 10m\n  prune: true\n  path: ./apps\n  sourceRef: {kind: GitRepository, name: flux-system}\n"), true, true},
		{"misspelled required field", ks("  interval: 10m\n  prune: true\n  path: ./apps\n  sourceRefs: {kind: GitRepository, name: flux-system}\n"), true, false},
		{"no CRD", &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cert-manager.io/v1", "kind": "Issuer", "metadata": map[string]any{"name": "x"}}}, false, true},
	} {
		res := v.Validate(context.Background(), tt.obj)
		if res.Known != tt.known || (len(res.Errors) == 0) != tt.ok {
			t.Errorf("%s: known %t, errors %v; want known %t, ok %t", tt.name, res.Known, res.Errors, tt.known, tt.ok)
		}
	}
}
