package apply

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

var fluxLabels = map[string]string{"app.kubernetes.io/part-of": "flux", "app.kubernetes.io/instance": "flux-system", "app.kubernetes.io/version": "v2.9.5"}

func sa(name string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ServiceAccount")
	u.SetNamespace("flux-system")
	u.SetName(name)
	u.SetLabels(labels)
	return u
}

// TestLiveReadsByList: the render's objects come from one list; the two it
// misses are told apart by one list of names: one that exists (an older
// install labelled it otherwise) is still read on its own, one that does
// not exist is absent without a read; and a namespaced kind without a
// namespace is never listed across the cluster.
func TestLiveReadsByList(t *testing.T) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("ServiceAccount"), meta.RESTScopeNamespace)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	old := map[string]string{"app.kubernetes.io/part-of": "flux"} // no instance label
	objs := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "source-controller", Labels: fluxLabels}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "kustomize-controller", Labels: old}},
	}
	var lists, gets int
	c := fake.NewClientBuilder().WithScheme(s).WithRESTMapper(mapper).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, o ...client.ListOption) error {
			lists++
			return c.List(ctx, l, o...)
		},
		Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, obj client.Object, o ...client.GetOption) error {
			gets++
			return c.Get(ctx, k, obj, o...)
		},
	}).Build()
	render := []*unstructured.Unstructured{sa("source-controller", fluxLabels), sa("kustomize-controller", fluxLabels), sa("helm-controller", fluxLabels)}
	cm := &unstructured.Unstructured{}
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	cm.SetName("no-namespace")
	cm.SetLabels(fluxLabels)
	cm2 := cm.DeepCopy()
	cm2.SetName("no-namespace-2")
	render = append(render, cm, cm2)

	ctx := context.Background()
	lv := ReadLive(ctx, c, render, nil)
	if lists != 2 {
		t.Fatalf("%d lists, want 2 (ServiceAccounts in flux-system by label, then their names; no cluster-wide list of ConfigMaps)", lists)
	}
	for name, want := range map[string]bool{"source-controller": true, "kustomize-controller": true, "helm-controller": false} {
		got, err := lv.Get(ctx, sa(name, fluxLabels))
		if err != nil || (got != nil) != want {
			t.Errorf("%s: live %v, err %v; want found=%t", name, got, err, want)
		}
	}
	if gets != 1 {
		t.Errorf("%d reads, want 1: the one the list missed (other labels), not the absent one", gets)
	}
	// Read again: served from what was read, also the absence.
	for _, n := range []string{"source-controller", "kustomize-controller", "helm-controller"} {
		_, _ = lv.Get(ctx, sa(n, fluxLabels))
	}
	into := &unstructured.Unstructured{}
	into.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ServiceAccount"))
	if err := lv.Reader().Get(ctx, client.ObjectKey{Namespace: "flux-system", Name: "source-controller"}, into); err != nil || into.GetName() != "source-controller" {
		t.Fatalf("reader: %v %v", err, into)
	}
	if gets != 1 {
		t.Errorf("%d reads after the second round, want still 1", gets)
	}
}
