package fluxrepo

import (
	"maps"
	"testing"
)

// Data keeps the labels the object carries in the cluster, for check to
// match with kustomize-controller's --watch-configs-label-selector: a
// ConfigMap's own, and for a made Secret those its maker puts on it
// (external-secrets: spec.target.template.metadata.labels; sealed-secrets:
// spec.template.metadata.labels).
func TestDataLabels(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, y string
		want    map[string]string
	}{
		{"ConfigMap", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: vars\n  labels: {owner: helm}\ndata: {a: b}\n", map[string]string{"owner": "helm"}},
		{"ConfigMap without labels", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: vars\ndata: {a: b}\n", nil},
		{"ExternalSecret", "apiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata:\n  name: app\n  labels: {on: the-maker}\nspec:\n  target:\n    template:\n      metadata:\n        labels: {reconcile.fluxcd.io/watch: Enabled}\n  data:\n    - secretKey: TOKEN\n", map[string]string{"reconcile.fluxcd.io/watch": "Enabled"}},
		{"SealedSecret", "apiVersion: bitnami.com/v1alpha1\nkind: SealedSecret\nmetadata:\n  name: app\nspec:\n  encryptedData: {TOKEN: AgB}\n  template:\n    metadata:\n      labels: {owner: helm}\n", map[string]string{"owner": "helm"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := appliedResource(t, tc.y)
			d := madeSecret(r, "default")
			if d == nil {
				d = dataOf(r, "default")
			}
			if !maps.Equal(d.Labels, tc.want) {
				t.Fatalf("labels %v, want %v", d.Labels, tc.want)
			}
		})
	}
}
