package converge

import (
	"fmt"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// Planned is a dry run's converge.node gates: one per node of the graph the
// walk would take, in its order, each a skip that says what the walk would
// wait for ("planned: …"). Nothing was applied, so nothing converged; the
// gates are optional (a dry run is not incomplete for it), and the list is
// the plan: the declared graph (the repository's Kustomizations, created
// yet or not) when the phase has one.
func (p *Phase) Planned() []verify.Check {
	levels := p.g.Levels()
	ids := p.g.InOrder()
	out := make([]verify.Check, 0, len(ids))
	for i, id := range ids {
		n := p.g.Nodes[id]
		kind := "Kustomization"
		if id.IsHelmRelease() {
			kind = "HelmRelease"
		}
		msg := fmt.Sprintf("planned: step %d of %d, level %d: the walk would wait for %s %s to be Ready at the current revision of %s", i+1, len(ids), levels[id], kind, id, n.Source)
		if len(n.DependsOn) > 0 {
			msg += fmt.Sprintf(", after %d dependsOn target(s)", len(n.DependsOn))
		}
		c := GateNode.Each(id.String()).Skip(msg + "; dry run: nothing was applied, so nothing was walked")
		c.Optional = true
		out = append(out, c)
	}
	return out
}
