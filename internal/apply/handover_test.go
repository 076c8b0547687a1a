package apply

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/homelab-ops/bootstrap/internal/kube"
)

func managers(t *testing.T, c client.Client, name string) map[string]string {
	t.Helper()
	var cm corev1.ConfigMap
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "flux-system", Name: name}, &cm); err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, e := range cm.ManagedFields {
		m[e.Manager] = string(e.FieldsV1.Raw)
	}
	return m
}

// The fields this tool applied become kustomize-controller's, merged with
// what it owned; an object kustomize-controller does not apply is skipped.
// The merge is kustomize-controller v1.9.5's own for kubectl's fields
// (internal/controller/kustomization_controller.go, the fieldManagers given
// to applyOpts.Cleanup, applied by fluxcd/pkg/ssa's cleanupMetadata through
// PatchReplaceFieldsManagers under its manager name, main.go's
// --controller-name default "kustomize-controller"). The incident stage
// (test/e2e/gauntlet_incident_test.go) shows the controller agreeing: after
// the hand-over its apply of the next revision removes the key Git removed.
func TestHandOver(t *testing.T) {
	fields := func(keys ...string) *metav1.FieldsV1 {
		raw := `{"f:data":{`
		for i, k := range keys {
			if i > 0 {
				raw += ","
			}
			raw += `"f:` + k + `":{}`
		}
		return &metav1.FieldsV1{Raw: []byte(raw + `}}`)}
	}
	cm := func(name string, entries ...metav1.ManagedFieldsEntry) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: name, ManagedFields: entries},
			Data: map[string]string{"domain": "d", "k8sServiceHost": "h"}}
	}
	entry := func(mgr string, f *metav1.FieldsV1) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: mgr, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: f}
	}
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithReturnManagedFields().WithObjects(
		cm("cluster-vars", entry(kube.FieldManager, fields("domain", "k8sServiceHost")), entry(KustomizeControllerManager, fields("domain"))),
		cm("disabled", entry(kube.FieldManager, fields("domain"))),
	).Build()
	obj := func(name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("ConfigMap")
		u.SetNamespace("flux-system")
		u.SetName(name)
		return u
	}
	n, err := HandOver(context.Background(), c, []*unstructured.Unstructured{obj("cluster-vars"), obj("disabled")}, func(live *unstructured.Unstructured) bool {
		return live.GetName() == "disabled"
	})
	if err != nil || n != 1 {
		t.Fatalf("HandOver: %d, %v", n, err)
	}
	got := managers(t, c, "cluster-vars")
	if _, ok := got[kube.FieldManager]; ok || len(got) != 1 {
		t.Fatalf("cluster-vars managers after the hand-over: %v, want kustomize-controller alone", got)
	}
	if f := got[KustomizeControllerManager]; f != `{"f:data":{"f:domain":{},"f:k8sServiceHost":{}}}` {
		t.Errorf("kustomize-controller owns %s, want both keys", f)
	}
	if _, ok := managers(t, c, "disabled")[kube.FieldManager]; !ok {
		t.Error("a skipped object lost its manager")
	}
	// Nothing left to hand over: no request that changes anything.
	if n, err := HandOver(context.Background(), c, []*unstructured.Unstructured{obj("cluster-vars")}, nil); err != nil || n != 0 {
		t.Errorf("second HandOver: %d, %v", n, err)
	}
}

// An object that cannot be read is an error naming it (sync.applied fails),
// not a silent skip that would leave its fields co-owned.
func TestHandOverNamesWhatItCouldNotRead(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace("flux-system")
	u.SetName("cluster-vars")
	n, err := HandOver(context.Background(), c, []*unstructured.Unstructured{u}, nil)
	if err == nil || n != 0 || !strings.Contains(err.Error(), "ConfigMap/flux-system/cluster-vars") {
		t.Fatalf("HandOver of a missing object: %d, %v", n, err)
	}
}
