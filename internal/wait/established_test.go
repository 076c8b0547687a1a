package wait

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func crd(name string, established bool) *apiextensionsv1.CustomResourceDefinition {
	c := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1}}
	c.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{
		{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue},
	}
	if established {
		c.Status.Conditions = append(c.Status.Conditions, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue})
	}
	return c
}

func asU(t *testing.T, o client.Object, kind string) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion("apiextensions.k8s.io/v1")
	u.SetKind(kind)
	return u
}

// TestEstablished: an established CRD passes at once; one that never is
// fails at the timeout naming it and its kstatus state.
func TestEstablished(t *testing.T) {
	s := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	ok, stuck := crd("oks.example.io", true), crd("stucks.example.io", false)
	conflict := crd("conflicts.example.io", false)
	conflict.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{
		{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionFalse, Reason: "ListKindConflict", Message: "\"ExampleList\" is already in use"},
	}
	// The fake client reads selectors from ListOptions, not from Raw as
	// the API server does: carry them over.
	cooked := func(opts []client.ListOption) []client.ListOption {
		lo := &client.ListOptions{}
		lo.ApplyOptions(opts)
		if lo.Raw != nil && lo.Raw.FieldSelector != "" {
			lo.FieldSelector = fields.ParseSelectorOrDie(lo.Raw.FieldSelector)
			lo.Raw = nil
		}
		return []client.ListOption{lo}
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(ok, stuck, conflict).
		WithIndex(&apiextensionsv1.CustomResourceDefinition{}, "metadata.name", func(o client.Object) []string { return []string{o.GetName()} }).
		WithInterceptorFuncs(interceptor.Funcs{
			List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
				return c.List(ctx, l, cooked(opts)...)
			},
			Watch: func(ctx context.Context, c client.WithWatch, l client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
				return c.Watch(ctx, l, cooked(opts)...)
			},
		}).Build()
	ctx := context.Background()
	if err := Established(ctx, c, []*unstructured.Unstructured{asU(t, ok, "CustomResourceDefinition")}, 5*time.Second); err != nil {
		t.Fatalf("established CRD: %v", err)
	}
	err := Established(ctx, c, []*unstructured.Unstructured{asU(t, ok, "CustomResourceDefinition"), asU(t, stuck, "CustomResourceDefinition")}, 500*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "stucks.example.io") || !strings.Contains(err.Error(), "InProgress") {
		t.Fatalf("stuck CRD: err = %v, want it named with its kstatus state", err)
	}
	// A CRD kstatus calls Failed ends the wait at once, not at the timeout
	// (the message says failed, not "not ready in time").
	err = Established(ctx, c, []*unstructured.Unstructured{asU(t, conflict, "CustomResourceDefinition")}, time.Minute)
	if err == nil || !strings.Contains(err.Error(), "CustomResourceDefinition/conflicts.example.io failed") || strings.Contains(err.Error(), "in time") {
		t.Fatalf("conflicting CRD: err = %v, want it failed at once", err)
	}
}

// TestMain: client-go's reflector lists by a streaming watch
// (WatchListClient); the fake client's watch sends no initial events, so
// here it lists the old way. The real API server does both.
func TestMain(m *testing.M) {
	os.Setenv("KUBE_FEATURE_WatchListClient", "false")
	os.Exit(m.Run())
}
