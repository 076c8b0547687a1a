package converge

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/internal/fluxgraph"
	"github.com/homelab-ops/bootstrap/internal/fluxobj"
)

// TestReadControllers: the walk reads each controller's effective
// --requeue-dependency from its live Deployment (30 s when unset, both
// controllers' main.go default) and helm-controller's
// AdditiveCELDependencyCheck gate; a Deployment it cannot read is said so.
func TestReadControllers(t *testing.T) {
	dep := func(name string, args ...string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: name},
			Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "manager", Image: "ghcr.io/fluxcd/" + name + ":v1.6.4", Args: args}}}}}}
	}
	hr := fluxgraph.NodeID{Kind: fluxobj.HelmReleaseKind, Namespace: "apps", Name: "web"}
	for _, tc := range []struct {
		name     string
		objs     []*appsv1.Deployment
		ids      []fluxgraph.NodeID
		want     string
		additive bool
	}{
		{"Kustomizations only: helm-controller not read", []*appsv1.Deployment{dep("kustomize-controller", "--requeue-dependency=5s")}, nil,
			"kustomize-controller 5s", false},
		{"both, one by default", []*appsv1.Deployment{dep("kustomize-controller", "--requeue-dependency", "10s"), dep("helm-controller", "--feature-gates=AdditiveCELDependencyCheck=true")}, []fluxgraph.NodeID{hr},
			"kustomize-controller 10s, helm-controller 30s (default)", true},
		{"a Deployment missing", []*appsv1.Deployment{dep("helm-controller", "--requeue-dependency=1m")}, []fluxgraph.NodeID{hr},
			`kustomize-controller unknown (Deployment flux-system/kustomize-controller not read: deployments.apps "kustomize-controller" not found), helm-controller 1m0s`, false},
		{"a value the controller would refuse", []*appsv1.Deployment{dep("kustomize-controller", "--requeue-dependency=soon")}, nil,
			`kustomize-controller unknown (--requeue-dependency=soon: time: invalid duration "soon")`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme)
			for _, o := range tc.objs {
				b = b.WithObjects(o)
			}
			p := &Phase{cl: &apply.Cluster{Client: b.Build()}, o: DefaultOptions(), g: &fluxgraph.Graph{IDs: tc.ids}}
			lc := p.readControllers(context.Background())
			if got := lc.requeueText(); got != tc.want || lc.additiveCEL != tc.additive {
				t.Errorf("got %q, additive %t\nwant %q, additive %t", got, lc.additiveCEL, tc.want, tc.additive)
			}
		})
	}
}
