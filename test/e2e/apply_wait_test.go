//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/ssa"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// crdFor is a namespaced CRD of group apply-wait.example.io; listKind
// lets a test make its names conflict with another CRD's.
func crdFor(plural, kind, listKind string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + ".apply-wait.example.io"},
		"spec": map[string]any{
			"group": "apply-wait.example.io", "scope": "Namespaced",
			"names": map[string]any{"plural": plural, "singular": strings.ToLower(kind), "kind": kind, "listKind": listKind},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	}}
}

// TestApplyWaitsForEveryCRD: the staged apply waits before a later stage
// only for the CRDs that stage needs, and for the others alongside it — but
// it still waits: a CRD that can never be established fails the apply,
// at once (kstatus calls it Failed), whether the later stage needed it or
// not. A later object of the CRD's kind is never applied before it.
func TestApplyWaitsForEveryCRD(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := apply.Connect(suite.sb.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	run := func(objs ...*unstructured.Unstructured) error {
		plan, err := apply.Plan(ctx, cl, objs, apply.PlanOptions{})
		if err != nil {
			t.Fatalf("plan: %v", err)
		}
		_, err = apply.Apply(ctx, cl, objs, plan, time.Minute)
		return err
	}
	// created plans objs as created without reading them (a plan cannot
	// read an object whose CRD the same apply creates).
	created := func(objs ...*unstructured.Unstructured) []verify.ObjectChange {
		var out []verify.ObjectChange
		for _, o := range objs {
			out = append(out, verify.ObjectChange{Object: apply.ID(o), Action: ssa.CreatedAction})
		}
		return out
	}
	owner := crdFor("widgets", "Widget", "WidgetList")
	t.Cleanup(func() {
		for _, name := range []string{"widgets", "gadgets", "gizmos"} {
			_ = cl.Client.Delete(context.Background(), crdFor(name, "X", "XList"))
		}
		cm := &unstructured.Unstructured{}
		cm.SetAPIVersion("v1")
		cm.SetKind("ConfigMap")
		cm.SetNamespace("default")
		cm.SetName("apply-wait")
		_ = cl.Client.Delete(context.Background(), cm)
	})
	if err := run(owner); err != nil {
		t.Fatalf("the first CRD: %v", err)
	}

	// Not needed by the later stage: waited for alongside it, still fails.
	conflicting := crdFor("gadgets", "Gadget", "WidgetList")
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "apply-wait", "namespace": "default"}}}
	t0 := time.Now()
	err = run(conflicting, cm)
	if err == nil || !strings.Contains(err.Error(), "after the apply") || !strings.Contains(err.Error(), "gadgets.apply-wait.example.io failed") {
		t.Fatalf("a CRD whose names conflict, waited for alongside: err = %v, want the apply to fail naming it", err)
	}
	if took := time.Since(t0); took > 30*time.Second {
		t.Errorf("the failure took %s: a Failed CRD should end the wait at once", took)
	}
	live := cm.DeepCopy()
	if err := cl.Client.Get(ctx, client.ObjectKeyFromObject(cm), live); err != nil {
		t.Errorf("the later stage (a ConfigMap that needs no CRD) was not applied alongside: %v", err)
	}

	// Needed by the later stage: waited for before it, and its object
	// is never applied.
	conflicting2 := crdFor("gizmos", "Gizmo", "WidgetList")
	gizmo := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apply-wait.example.io/v1", "kind": "Gizmo",
		"metadata": map[string]any{"name": "g", "namespace": "default"}}}
	_, err = apply.Apply(ctx, cl, []*unstructured.Unstructured{conflicting2, gizmo}, created(conflicting2, gizmo), time.Minute)
	if err == nil || !strings.Contains(err.Error(), "before the objects that need them") || !strings.Contains(err.Error(), "gizmos.apply-wait.example.io failed") {
		t.Fatalf("a CRD whose names conflict, needed by a later object: err = %v, want the apply to stop before that object", err)
	}
	if strings.Contains(err.Error(), "Gizmo") && strings.Contains(err.Error(), "apply failed") {
		t.Errorf("the Gizmo was applied before its CRD was established: %v", err)
	}
}
