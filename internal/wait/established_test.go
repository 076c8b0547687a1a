package wait

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
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
	flux := map[string]string{"app.kubernetes.io/part-of": "flux", "app.kubernetes.io/instance": "flux-system"}
	fluxA, fluxB, fluxStuck := crd("as.flux.example.io", true), crd("bs.flux.example.io", true), crd("stucks.flux.example.io", false)
	for _, c := range []*apiextensionsv1.CustomResourceDefinition{fluxA, fluxB, fluxStuck} {
		c.Labels = flux
	}
	fluxMissing := crd("missings.flux.example.io", true)
	fluxMissing.Labels = flux
	conflict := crd("conflicts.example.io", false)
	conflict.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{
		{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionFalse, Reason: "ListKindConflict", Message: "\"ExampleList\" is already in use"},
	}
	// The fake client reads selectors from ListOptions, not from Raw as
	// the API server does: carry them over.
	cooked := func(opts []client.ListOption) []client.ListOption {
		lo := &client.ListOptions{}
		lo.ApplyOptions(opts)
		if lo.Raw != nil {
			if lo.Raw.FieldSelector != "" {
				lo.FieldSelector = fields.ParseSelectorOrDie(lo.Raw.FieldSelector)
			}
			if lo.Raw.LabelSelector != "" {
				lo.LabelSelector = labels.SelectorFromSet(labels.Set(mustLabels(lo.Raw.LabelSelector)))
			}
			lo.Raw = nil
		}
		return []client.ListOption{lo}
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(ok, stuck, conflict, fluxA, fluxB, fluxStuck).
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
	// The labelled CRDs of one install share one watch selected by their
	// labels: all established passes; one stuck or missing is named.
	u := func(c *apiextensionsv1.CustomResourceDefinition) *unstructured.Unstructured {
		return asU(t, c, "CustomResourceDefinition")
	}
	if err := Established(ctx, c, []*unstructured.Unstructured{u(fluxA), u(fluxB)}, 5*time.Second); err != nil {
		t.Fatalf("labelled established CRDs: %v", err)
	}
	err = Established(ctx, c, []*unstructured.Unstructured{u(fluxA), u(fluxStuck), u(fluxB)}, 500*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "stucks.flux.example.io") || !strings.Contains(err.Error(), "InProgress") || strings.Contains(err.Error(), "as.flux") {
		t.Fatalf("labelled stuck CRD: err = %v, want it (and only it) named with its kstatus state", err)
	}
	err = Established(ctx, c, []*unstructured.Unstructured{u(fluxA), u(fluxMissing)}, 500*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "missings.flux.example.io: not ready in time (last state: not found)") {
		t.Fatalf("labelled missing CRD: err = %v, want it named as not found", err)
	}
	// A CRD kstatus calls Failed ends the wait at once, not at the timeout
	// (the message says failed, not "not ready in time").
	err = Established(ctx, c, []*unstructured.Unstructured{asU(t, conflict, "CustomResourceDefinition")}, time.Minute)
	if err == nil || !strings.Contains(err.Error(), "CustomResourceDefinition/conflicts.example.io failed") || strings.Contains(err.Error(), "in time") {
		t.Fatalf("conflicting CRD: err = %v, want it failed at once", err)
	}
}

// TestEstablishWatches: the CRDs of one kind sharing the render's labels
// share one watch; an unlabelled CRD, a lone one and other kinds do not.
func TestEstablishWatches(t *testing.T) {
	obj := func(kind, name string, l map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("apiextensions.k8s.io/v1")
		if kind == "Namespace" || kind == "ConfigMap" {
			u.SetAPIVersion("v1")
		}
		u.SetKind(kind)
		u.SetName(name)
		u.SetLabels(l)
		return u
	}
	flux := map[string]string{"app.kubernetes.io/part-of": "flux", "app.kubernetes.io/instance": "flux-system", "app.kubernetes.io/version": "v2.9.5"}
	ws := establishWatches([]*unstructured.Unstructured{
		obj("CustomResourceDefinition", "a", flux), obj("CustomResourceDefinition", "b", flux),
		obj("CustomResourceDefinition", "c", nil), obj("Namespace", "flux-system", flux), obj("ConfigMap", "x", flux),
	})
	var got []string
	for _, w := range ws {
		got = append(got, fmt.Sprintf("%s %v %s", w.gvk.Kind, w.names, labels.SelectorFromSet(w.labels)))
	}
	want := []string{
		"CustomResourceDefinition [a b] app.kubernetes.io/instance=flux-system,app.kubernetes.io/part-of=flux",
		"CustomResourceDefinition [c] ",
		"Namespace [flux-system] ",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("watches:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// mustLabels parses a label selector of equalities (a=b,c=d).
func mustLabels(s string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(kv, "=")
		out[k] = v
	}
	return out
}

// TestMain: client-go's reflector lists by a streaming watch
// (WatchListClient); the fake client's watch sends no initial events, so
// here it lists the old way. The real API server does both.
func TestMain(m *testing.M) {
	os.Setenv("KUBE_FEATURE_WatchListClient", "false")
	os.Exit(m.Run())
}
