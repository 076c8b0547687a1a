package converge

import (
	"context"
	"time"

	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// Walk is the converge walk inside another phase's step — sync's root,
// cutover's consumers and its rollback: the live Kustomizations o.Select
// keeps, walked with converge's nudges and budgets until each is converged
// at its source's current revision, so a wait for a new revision takes the
// critical path, not kustomize-controller's --requeue-dependency per level.
// It returns the before-gates' checks and, when they passed, one
// converge.node check per node (the caller words its own gate from them),
// and the walk's facts (converge.nudges, converge.critical-path …).
// Progress lines go to progress. A selection has no root (o.Root is
// ignored): the caller proves a set of Kustomizations, not an environment.
func Walk(ctx context.Context, cl *apply.Cluster, o Options, progress func(string)) ([]verify.Check, map[string]string, error) {
	p := NewPhase(func() (*apply.Cluster, error) { return cl, nil }, o)
	p.o.Root = NodeID{}
	run := &pipeline.Run{Report: verify.NewReport(PhaseName), Progress: progress, Now: time.Now}
	checks, err := p.Before(ctx, run)
	if err != nil || len(Unconverged(checks)) > 0 {
		return checks, run.Report.Facts, err
	}
	if err := p.Do(ctx, run); err != nil {
		return checks, run.Report.Facts, err
	}
	return append(checks, p.After(ctx, run)...), run.Report.Facts, nil
}

// Unconverged are the checks of a Walk that did not pass (warnings pass).
func Unconverged(checks []verify.Check) []verify.Check {
	var out []verify.Check
	for _, c := range checks {
		if c.Verdict != verify.Pass && c.Verdict != verify.Warn {
			out = append(out, c)
		}
	}
	return out
}
