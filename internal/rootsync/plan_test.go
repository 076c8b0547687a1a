package rootsync

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/pkg/components"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// noFlux is a client of a cluster that serves no Flux API: its scheme
// (and so its RESTMapper) has only Kubernetes' own kinds.
func noFlux(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	m := meta.NewDefaultRESTMapper(nil)
	for gvk := range s.AllKnownTypes() {
		m.Add(gvk, meta.RESTScopeNamespace)
	}
	return fake.NewClientBuilder().WithScheme(s).WithRESTMapper(m).WithObjects(objs...).Build()
}

// stageRelease stages the CRDs of an embedded release, as the controllers
// phase of a dry run stages its render.
func stageRelease(t *testing.T, run *pipeline.Run) {
	t.Helper()
	b, err := components.EmbeddedBundle("v2.9.5")
	if err != nil {
		t.Fatal(err)
	}
	crds, err := b.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	for i := range crds {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&crds[i])
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: m}
		u.SetAPIVersion("apiextensions.k8s.io/v1")
		u.SetKind("CustomResourceDefinition")
		run.Stage(u)
	}
}

// TestPlanFlux: a dry run on a cluster without Flux plans the sync only
// when a phase before it staged Flux's CRDs; then the root's objects are
// validated against them: the fixture's root warns "planned:", a
// Kustomization missing its required spec.interval fails, naming it.
func TestPlanFlux(t *testing.T) {
	ctx := context.Background()
	cl := noFlux(t)
	for _, tt := range []struct {
		name          string
		dryRun, stage bool
		breakIt       bool
		want          verify.Verdict // "" for not planned
		msg           string
	}{
		{name: "a real run is not planned", dryRun: false, stage: true},
		{name: "nothing staged the CRDs", dryRun: true, stage: false},
		{name: "planned", dryRun: true, stage: true, want: verify.Warn, msg: "planned: Flux is not installed yet"},
		{name: "invalid object", dryRun: true, stage: true, breakIt: true, want: verify.Fail, msg: "Kustomization/flux-system/apps-core (clusters/base/apps.yaml:2) is invalid: spec.interval: Required value"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Build(opts(fixture, "dev"))
			if err != nil {
				t.Fatal(err)
			}
			if tt.breakIt {
				for _, o := range r.Objects {
					if o.GetKind() == "Kustomization" && o.GetName() == "apps-core" {
						unstructured.RemoveNestedField(o.Object, "spec", "interval")
					}
				}
			}
			run := &pipeline.Run{Report: verify.NewReport("up"), DryRun: tt.dryRun}
			if tt.stage {
				stageRelease(t, run)
			}
			pf := planFlux(run, cl, r)
			if tt.want == "" {
				if pf != nil {
					t.Fatal("planned, want the sync refused as before (Flux not installed)")
				}
				return
			}
			if pf == nil {
				t.Fatal("not planned")
			}
			c := pf.check(ctx, r)
			if c.Verdict != tt.want || !strings.Contains(c.Message, tt.msg) {
				t.Fatalf("%s: %s, want %s containing %q", c.ID, string(c.Verdict)+": "+c.Message, tt.want, tt.msg)
			}
		})
	}
}

// TestPlannedGates: on a dry run, a gate that passes only on what an
// earlier phase staged warns "planned:", naming it; one the cluster
// satisfies passes; one nothing satisfies fails as before; a real run
// never reads the staged objects.
func TestPlannedGates(t *testing.T) {
	ctx := context.Background()
	r, err := Build(opts(fixture, "dev"))
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "sops-age"}}
	staged, err := runtime.DefaultUnstructuredConverter.ToUnstructured(secret)
	if err != nil {
		t.Fatal(err)
	}
	id := GateDecryption.ID + "/flux-system/sops-age"
	for _, tt := range []struct {
		name          string
		dryRun, stage bool
		live          []client.Object
		want          verify.Verdict
		msg           string
	}{
		{"staged on a dry run", true, true, nil, verify.Warn, "planned: Secret flux-system/sops-age exists"},
		{"in the cluster", true, true, []client.Object{secret.DeepCopy()}, verify.Pass, "Secret flux-system/sops-age exists"},
		{"nowhere", true, false, nil, verify.Fail, "not found"},
		{"staged, real run", false, true, nil, verify.Fail, "not found"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			run := &pipeline.Run{Report: verify.NewReport("up"), DryRun: tt.dryRun}
			if tt.stage {
				run.Stage(&unstructured.Unstructured{Object: staged})
			}
			cs := planned(run, noFlux(t, tt.live...), func(c client.Client) []verify.Check { return DecryptionSecrets(ctx, c, r) })
			c := find(t, cs, id)
			if c.Verdict != tt.want || !strings.Contains(c.Message, tt.msg) {
				t.Fatalf("%s: %s %s, want %s containing %q", id, c.Verdict, c.Message, tt.want, tt.msg)
			}
		})
	}
}
