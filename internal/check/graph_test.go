package check

import (
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/homelab-ops/bootstrap/internal/fluxgraph"
)

// TestDependsOnEntrySpelling: the race fix's dependsOn entry, pasted into
// the dependent, names the applier. kustomize-controller v1.9.5 defaults a
// dependsOn entry's empty namespace to the dependent's own
// (checkDependencies), which the graph models: so a cross-namespace applier
// must be spelled with its namespace ("add dependsOn: [{name:
// cluster-apps}]" in apps would fail "dependency not found").
func TestDependsOnEntrySpelling(t *testing.T) {
	for _, tc := range []struct {
		name, dependentNS string
		applier           fluxgraph.NodeID
		want              string
	}{
		{name: "same namespace: the name alone", dependentNS: "flux-system",
			applier: fluxgraph.NodeID{Namespace: "flux-system", Name: "cluster-apps"}, want: "{name: cluster-apps}"},
		{name: "applier in flux-system, dependent elsewhere: the namespace spelled", dependentNS: "apps",
			applier: fluxgraph.NodeID{Namespace: "flux-system", Name: "cluster-apps"}, want: "{name: cluster-apps, namespace: flux-system}"},
		{name: "applier elsewhere, dependent in flux-system", dependentNS: "flux-system",
			applier: fluxgraph.NodeID{Namespace: "apps", Name: "apps-config"}, want: "{name: apps-config, namespace: apps}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entry := dependsOnEntry(tc.applier, tc.dependentNS)
			if entry != tc.want {
				t.Fatalf("dependsOnEntry = %q, want %q", entry, tc.want)
			}
			// Paste the fix into the dependent and read it as the graph
			// (the controller's defaulting) does.
			var ref kustomizev1.DependencyReference
			if err := yaml.Unmarshal([]byte(entry), &ref); err != nil {
				t.Fatalf("the fix %q is not a dependsOn entry: %v", entry, err)
			}
			applier := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: tc.applier.Namespace, Name: tc.applier.Name}}
			dep := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: tc.dependentNS, Name: "app"},
				Spec: kustomizev1.KustomizationSpec{DependsOn: []kustomizev1.DependencyReference{ref}}}
			g := fluxgraph.New([]*kustomizev1.Kustomization{applier, dep}, fluxgraph.NodeID{}, "flux-system")
			node := g.Nodes[fluxgraph.ID(dep, "flux-system")]
			if node == nil || len(node.DependsOn) != 1 || node.DependsOn[0] != tc.applier {
				t.Fatalf("the fix %q in %s/app resolves to %v, want %s", entry, tc.dependentNS, node, tc.applier)
			}
		})
	}
}
