package fluxrepo

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	fluxkustomize "github.com/fluxcd/pkg/kustomize"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resource"
)

func appliedResource(t *testing.T, y string) *resource.Resource {
	t.Helper()
	r, err := provider.NewDefaultDepProvider().GetResourceFactory().FromBytes([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// varsReader is flux-system/apps substituting from ConfigMap vars.
func varsReader() *Kustomization {
	return &Kustomization{Kustomization: &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Name: "apps", Namespace: "flux-system"},
		Spec: kustomizev1.KustomizationSpec{PostBuild: &kustomizev1.PostBuild{
			SubstituteFrom: []kustomizev1.SubstituteReference{{Kind: "ConfigMap", Name: "vars"}},
		}},
	}}
}

// sizeOf is data.size of the ConfigMap out.
func sizeOf(t *testing.T, out *resource.Resource) string {
	t.Helper()
	m, err := out.Map()
	if err != nil {
		t.Fatal(err)
	}
	return m["data"].(map[string]any)["size"].(string)
}

// An answer of Applied holds while the substituteFrom objects it read are
// the same; one given before such an object was rendered is computed again.
func TestAppliedMemoFollowsData(t *testing.T) {
	t.Parallel()
	k := varsReader()
	e := &Env{Data: map[string]*Data{}}
	r := appliedResource(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: flux-system\ndata:\n  size: ${SIZE:=1Gi}\n")
	value := func(out *resource.Resource) string { return sizeOf(t, out) }
	first := e.Applied(k, r)
	// No variable at all: the controller substitutes nothing.
	if got := value(first); got != "${SIZE:=1Gi}" {
		t.Fatalf("without the ConfigMap: %q, want it as built", got)
	}
	if again := e.Applied(k, r); again != first {
		t.Fatal("asked again with the same data: want the remembered answer")
	}
	// Rendered later in the load: the earlier answer no longer holds.
	e.Data[DataKey("ConfigMap", "flux-system", "vars")] = &Data{Kind: "ConfigMap", Namespace: "flux-system", Name: "vars", Values: map[string]string{"SIZE": "5Gi"}}
	if got := value(e.Applied(k, r)); got != "5Gi" {
		t.Fatalf("after the ConfigMap was rendered: %q, want 5Gi", got)
	}
	if got := value(r); got != "${SIZE:=1Gi}" {
		t.Fatalf("the object as built changed: %q", got)
	}
	// The same object of another Kustomization is another answer.
	k2 := &Kustomization{Kustomization: k.DeepCopy()}
	k2.Spec.PostBuild.SubstituteFrom = nil
	k2.Spec.PostBuild.Substitute = map[string]string{"SIZE": "2Gi"}
	if got := value(e.Applied(k2, r)); got != "2Gi" {
		t.Fatalf("applied by another Kustomization: %q, want 2Gi", got)
	}
	// Substitution disabled: the object itself, as SubstituteVariables leaves it.
	d := appliedResource(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dash\n  annotations:\n    kustomize.toolkit.fluxcd.io/substitute: disabled\ndata:\n  x: ${DS}\n")
	if e.Applied(k, d) != d {
		t.Fatal("substitution disabled: want the object itself")
	}
}

// A build worker's substitution (presubstitute, ahead.go) is the walk's
// answer only while what it read is what the walk reads: one computed
// before the substituteFrom object was rendered is computed again.
func TestPresubstituteHeldToItsRead(t *testing.T) {
	t.Parallel()
	k := varsReader()
	e := &Env{Data: map[string]*Data{}}
	y := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: flux-system\ndata:\n  size: ${SIZE:=1Gi}\n"
	value := func(out *resource.Resource) string { return sizeOf(t, out) }
	// Submitted before vars was rendered, ingested after.
	stale := appliedResource(t, y)
	e.presubstitute(k, stale, e.substituteData(k))
	vars := &Data{Kind: "ConfigMap", Namespace: "flux-system", Name: "vars", Values: map[string]string{"SIZE": "5Gi"}}
	e.Data[DataKey("ConfigMap", "flux-system", "vars")] = vars
	if got := value(e.Applied(k, stale)); got != "5Gi" {
		t.Fatalf("worker read no ConfigMap, the walk reads one: %q, want 5Gi", got)
	}
	// Submitted with vars rendered: the worker's answer is taken, and it
	// is the controller's.
	fresh := appliedResource(t, y)
	e.presubstitute(k, fresh, e.substituteData(k))
	a, _, ok := e.appliedMemoized(k, fresh)
	if !ok {
		t.Fatal("the worker's answer is not remembered for the same read")
	}
	if got := e.Applied(k, fresh); got != a.out || value(got) != "5Gi" {
		t.Fatalf("the walk did not take the worker's answer (%q)", value(got))
	}
	// Substitution disabled: nothing computed ahead, as Applied computes nothing.
	d := appliedResource(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dash\n  annotations:\n    kustomize.toolkit.fluxcd.io/substitute: disabled\ndata:\n  x: ${DS}\n")
	e.presubstitute(k, d, e.substituteData(k))
	if _, _, ok := e.appliedMemoized(k, d); ok {
		t.Fatal("substitution disabled: computed ahead")
	}
}

// WritesDollar answers as the YAML the object is written as does.
func TestWritesDollar(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		y    string
		want bool
	}{
		{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: plain\n", false},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: cost $5\n", true},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  $k: v\n", true},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n# ${NOT} a value\ndata:\n  k: v\n", false},
	} {
		r := appliedResource(t, tc.y)
		y, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		if got, inYAML := WritesDollar(r), containsDollar(y); got != tc.want || inYAML != tc.want {
			t.Errorf("%q: WritesDollar %v, the YAML has $: %v, want %v", tc.y, got, inYAML, tc.want)
		}
	}
}

func containsDollar(b []byte) bool {
	for _, c := range b {
		if c == '$' {
			return true
		}
	}
	return false
}

// The build cache starts with the copy's files, not its kustomization
// files (the offline repair may rewrite them), and only inside the copy.
func TestFSCacheSeed(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	c := newFSCache()
	c.seed(root, []copiedFile{{"apps/a.yaml", []byte("a")}, {"apps/kustomization.yaml", []byte("k")}, {"apps/Kustomization", []byte("k")}})
	if r, ok := c.files[filepath.Join(root, "apps", "a.yaml")]; !ok || string(r.b) != "a" {
		t.Fatalf("apps/a.yaml not seeded: %v %q", ok, r.b)
	}
	for _, f := range []string{"kustomization.yaml", "Kustomization"} {
		if _, ok := c.files[filepath.Join(root, "apps", f)]; ok {
			t.Errorf("apps/%s seeded: want it read from the disk", f)
		}
	}
	if len(c.files) != 1 {
		t.Errorf("seeded %d files, want 1", len(c.files))
	}
}

// Substituted answers as kustomize-controller's own call does, the error
// included, and remembers it: check takes this answer for the same call.
func TestSubstitutedIsTheControllersCall(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, vars, want, err string
	}{
		{name: "defined", vars: "SIZE: 5Gi", want: "5Gi"},
		{name: "a key no variable may be named", vars: "bad-key: x", err: "envsubst error: 'bad-key' var name is invalid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			k := &Kustomization{Kustomization: &kustomizev1.Kustomization{
				ObjectMeta: metav1.ObjectMeta{Name: "apps", Namespace: "flux-system"},
				Spec: kustomizev1.KustomizationSpec{PostBuild: &kustomizev1.PostBuild{
					SubstituteFrom: []kustomizev1.SubstituteReference{{Kind: "ConfigMap", Name: "vars"}},
				}},
			}}
			name, value, _ := strings.Cut(tc.vars, ": ")
			e := &Env{Data: map[string]*Data{DataKey("ConfigMap", "flux-system", "vars"): {Kind: "ConfigMap", Namespace: "flux-system", Name: "vars", Values: map[string]string{name: value}}}}
			r := appliedResource(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: flux-system\ndata:\n  size: ${SIZE}\n")
			uobj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(k.Kustomization)
			if err != nil {
				t.Fatal(err)
			}
			direct, derr := fluxkustomize.SubstituteVariables(context.Background(), DataClient{Env: e}, unstructured.Unstructured{Object: uobj}, r.DeepCopy())
			out, err := e.Substituted(k, r)
			if fmt.Sprint(err) != fmt.Sprint(derr) || (tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err))) {
				t.Fatalf("error %v, the controller's call %v, want %q", err, derr, tc.err)
			}
			if tc.want != "" {
				m, _ := out.Map()
				dm, _ := direct.Map()
				if got := m["data"].(map[string]any)["size"]; got != tc.want || !reflect.DeepEqual(m, dm) {
					t.Fatalf("got %v, the controller's call %v", m, dm)
				}
			}
			if again, err2 := e.Substituted(k, r); again != out || fmt.Sprint(err2) != fmt.Sprint(err) {
				t.Fatal("asked again with the same data: want the remembered answer")
			}
		})
	}
}
