package controllers

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/customize"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/pkg/patches"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// TestStatusDrift: the read-only phase names the drift as the plan would:
// a Deployment whose live flags lost the strict gate is "configured …
// restarts", a missing one "created", and a cluster that holds the render
// passes.
func TestStatusDrift(t *testing.T) {
	strict := []string{"--log-level=info", "--feature-gates=StrictPostBuildSubstitutions=true"}
	rendered := liveDeployment(strict, "", 0)
	rendered.TypeMeta.APIVersion, rendered.TypeMeta.Kind = "apps/v1", "Deployment"
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(rendered)
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{Object: m}
	tests := []struct {
		name    string
		live    *appsv1.Deployment
		verdict verify.Verdict
		want    string
	}{
		{"no drift", liveDeployment(strict, "2", 1), verify.Pass, "all 1 object(s)"},
		{"strict flag removed", liveDeployment([]string{"--log-level=info"}, "2", 1), verify.Fail, "configured Deployment/flux-system/kustomize-controller (pod template changes: restarts)"},
		{"Deployment deleted", nil, verify.Fail, "created Deployment/flux-system/kustomize-controller"},
		// The operator reconciles them to its FluxInstance: drift from this
		// tool's render is not judged, the rollout still is.
		{"managed by the Flux Operator", operatorManaged(liveDeployment([]string{"--log-level=info"}, "2", 1)), verify.Warn, "the Flux Operator manages the controllers (FluxInstance flux-system/flux)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objs []client.Object
			if tt.live != nil {
				objs = append(objs, tt.live, replicaSet("rs-new", "2", "new", tt.live, 1), pod("p-new", "new"))
			}
			cl := fakeCluster(t, "v1.36.3", nil, objs...)
			p := &StatusPhase{cl: cl, objs: []*unstructured.Unstructured{obj},
				out: &customize.Output{Overlay: &patches.Result{Final: []appsv1.Deployment{*rendered}}, Facts: map[string]string{"fluxVersion": "v2.9.5", "overlays": "overlays (built in)"}}}
			checks := p.After(context.Background(), &pipeline.Run{Report: verify.NewReport("status")})
			d := verdictOf(checks, GateDrift.ID)
			if d.Verdict != tt.verdict || !strings.Contains(d.Message, tt.want) {
				t.Fatalf("drift: %s %q, want %s containing %q (evidence %v)", d.Verdict, d.Message, tt.verdict, tt.want, d.Evidence)
			}
			if f := verdictOf(checks, GateFlagsLive.ID); f.Verdict != tt.verdict {
				t.Errorf("flags-live: %s %q, want %s", f.Verdict, f.Message, tt.verdict)
			}
			if r := verdictOf(checks, GateRollout.ID); tt.live != nil && r.Verdict != verify.Pass {
				t.Errorf("rollout: %s %q, want pass", r.Verdict, r.Message)
			}
		})
	}
}

func operatorManaged(d *appsv1.Deployment) *appsv1.Deployment {
	if d.Labels == nil {
		d.Labels = map[string]string{}
	}
	d.Labels[operatorLabel] = "flux"
	d.Labels[operatorNamespaceLabel] = "flux-system"
	return d
}
