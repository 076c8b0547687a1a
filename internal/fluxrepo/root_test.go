package fluxrepo

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestRootObjectsDeepCopy: the root's objects are as the API machinery
// reads them, so an integer (the bootstrap layout's `replicas: 1`) is an
// int64 and the apply's DeepCopy does not panic on it.
func TestRootObjectsDeepCopy(t *testing.T) {
	e, err := Load(Options{Repo: "../../testdata/layouts/bootstrap", Path: "clusters/staging", Namespace: "flux-system", RootName: "flux-system", KeepGoing: true})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := e.RootObjects()
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range objs {
		if u.GetKind() == "Deployment" {
			if r, _, _ := unstructured.NestedInt64(u.DeepCopy().Object, "spec", "replicas"); r != 1 {
				t.Errorf("Deployment %s: replicas %d, want 1", u.GetName(), r)
			}
			return
		}
	}
	t.Fatal("no Deployment in the bootstrap layout's root")
}
