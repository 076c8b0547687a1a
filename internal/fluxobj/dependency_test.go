package fluxobj

import (
	"context"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Each row is a clause of helm-controller v1.6.4's checkDependencies
// (internal/controller/helmrelease_controller.go): the built-in check is
// generation observed and Ready=True, no revision; a readyExpr replaces it
// unless AdditiveCELDependencyCheck is on, then both must hold.
func TestHelmReleaseDependencyReady(t *testing.T) {
	dep := func(gen, observed int64, ready metav1.ConditionStatus) *helmv2.HelmRelease {
		d := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "apps", Generation: gen}}
		d.Status.ObservedGeneration = observed
		d.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: ready, Reason: "x", ObservedGeneration: observed}}
		d.Labels = map[string]string{"tier": "data"}
		return d
	}
	self := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "apps", Labels: map[string]string{"tier": "data"}}}
	for _, tc := range []struct {
		name     string
		dep      *helmv2.HelmRelease
		expr     string
		additive bool
		want     bool
		wantErr  bool
	}{
		{name: "ready at its generation", dep: dep(2, 2, metav1.ConditionTrue), want: true},
		{name: "generation not observed", dep: dep(3, 2, metav1.ConditionTrue)},
		{name: "not Ready", dep: dep(2, 2, metav1.ConditionFalse)},
		{name: "missing", dep: nil},
		{name: "readyExpr true replaces the built-in check", dep: dep(3, 2, metav1.ConditionFalse), expr: "dep.metadata.labels.tier == self.metadata.labels.tier", want: true},
		{name: "readyExpr false", dep: dep(2, 2, metav1.ConditionTrue), expr: "dep.metadata.labels.tier == 'web'"},
		{name: "additive: readyExpr true and the built-in check fails", dep: dep(3, 2, metav1.ConditionTrue), expr: "true", additive: true},
		{name: "additive: both hold", dep: dep(2, 2, metav1.ConditionTrue), expr: "true", additive: true, want: true},
		{name: "readyExpr that does not compile", dep: dep(2, 2, metav1.ConditionTrue), expr: "dep.status.", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := HelmReleaseDependencyReady(context.Background(), self, tc.dep, meta.DependencyReference{Name: "db", ReadyExpr: tc.expr}, tc.additive)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("got %v, %v; want %v (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
