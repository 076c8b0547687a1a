package check

import (
	"slices"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// Every declares check.clusters and each root's gates under its prefix, so
// the pipeline names every gate of a cluster that did not run; a family
// stays a family (its members' IDs begin with the prefixed ID and "/").
func TestEveryGates(t *testing.T) {
	t.Parallel()
	e := &Every{Roots: []fluxrepo.Root{{Path: "clusters/dev"}, {Path: "kubernetes/edge"}}}
	gates := e.Gates()
	if len(gates) != 1+2*len(Gates()) || gates[0].ID != Clusters.ID {
		t.Fatalf("gates: %v", gates)
	}
	ids := make([]string, len(gates))
	for i, g := range gates {
		ids[i] = g.ID
	}
	for _, want := range []string{"clusters.dev:check.render", "kubernetes.edge:check.graph", "kubernetes.edge:check.substitution"} {
		if !slices.Contains(ids, want) {
			t.Errorf("no gate %s in %v", want, ids)
		}
	}
	member := verify.Check{ID: "clusters.dev:check.substitution/flux-system/apps", Verdict: verify.Pass}
	for _, c := range verify.Missing(gates, []verify.Check{member}, "not run") {
		if c.ID == "clusters.dev:check.substitution" {
			t.Errorf("the family clusters.dev:check.substitution is reported missing though a member ran")
		}
	}
	if got := ClusterPrefix("clusters/dev"); got != "clusters.dev:" {
		t.Errorf("ClusterPrefix = %q", got)
	}
}
