package controllers

import (
	"context"
	"time"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/internal/customize"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/internal/wait"
	"github.com/homelab-ops/bootstrap/pkg/patches"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// Gates of the controllers phase (the render's own gates come from package
// patches and run first, before any request).
var (
	GateReachable      = verify.Def{ID: "cluster.reachable", Phase: PhaseName, Stage: verify.Before, Title: "API server reachable"}
	GateVersion        = verify.Def{ID: "cluster.version", Phase: PhaseName, Stage: verify.Before, Title: "Kubernetes version supported by Flux"}
	GatePermissions    = verify.Def{ID: "cluster.permissions", Phase: PhaseName, Stage: verify.Before, Title: "allowed to apply every object"}
	GateNamespace      = verify.Def{ID: "cluster.namespace", Phase: PhaseName, Stage: verify.Before, Title: "Flux namespace usable"}
	GateOwnership      = verify.Def{ID: "controllers.ownership", Phase: PhaseName, Stage: verify.Before, Title: "Flux not managed by something else"}
	GateStoredVersions = verify.Def{ID: "controllers.crd-stored-versions", Phase: PhaseName, Stage: verify.Before, Title: "CRD stored versions kept or migrated"}
	GatePrune          = verify.Def{ID: "controllers.prune", Phase: PhaseName, Stage: verify.After, Title: "leftovers of an earlier install pruned"}
	GateFlagsLive      = verify.Def{ID: "controllers.flags-live", Phase: PhaseName, Stage: verify.After, Title: "live Deployments carry the rendered flags"}
	GateRollout        = verify.Def{ID: "controllers.rollout", Phase: PhaseName, Stage: verify.After, Title: "rollouts finished"}
)

// Options of the controllers phase.
type Options struct {
	Render customize.Options
	// MinKubernetes is the Flux version's minimum Kubernetes (versions.env).
	MinKubernetes string
	// Force applies over a Flux managed by Flux itself.
	Force bool
	// MigrateCRDs moves objects off stored versions the new CRDs drop.
	MigrateCRDs bool
	// PruneCRDs prunes CRDs that still have custom resources.
	PruneCRDs bool
	// Timeout bounds the waits for CRDs and rollouts.
	Timeout time.Duration
	// YieldToOperator (up): controllers the Flux Operator manages are left
	// to it; the phase warns and applies nothing.
	YieldToOperator bool
}

// NewPhase is step 1: render with the overlays and prove them (offline),
// then the cluster's before-gates, the plan, the staged apply with prune and
// CRD migration, the rollout watch, and the proof that the live Deployments
// carry the rendered flags. connect opens the cluster only once the render
// passed.
func NewPhase(o Options, connect func() (*apply.Cluster, error)) *Phase {
	return &Phase{opts: o, connect: connect, render: customize.NewPhase(o.Render)}
}

// Phase is step 1 as a pipeline phase.
type Phase struct {
	opts    Options
	connect func() (*apply.Cluster, error)
	render  *customize.Phase

	out     *customize.Output
	objs    []*unstructured.Unstructured
	cl      *apply.Cluster
	dropped []apply.Dropped
	stale   *apply.Stale
	plan    []verify.ObjectChange
	// newNamespaces: the Flux namespace when the before-gates found it
	// absent (nothing of the render is in it when the plan runs).
	newNamespaces []string
	// operator is the FluxInstance the controllers are left to
	// (Options.YieldToOperator); the phase then applies nothing.
	operator string
}

// Operator names the FluxInstance that manages the controllers when the
// phase left them to it ("" otherwise).
func (p *Phase) Operator() string { return p.operator }

// Name implements pipeline.Phase.
func (p *Phase) Name() string { return PhaseName }

// Gates implements pipeline.Phase.
func (p *Phase) Gates() []verify.Def {
	return append(patches.Gates(),
		GateReachable, GateVersion, GatePermissions, GateNamespace, GateOwnership, GateStoredVersions,
		GatePrune, GateFlagsLive, GateRollout, GateDryRun)
}

// Cluster is the connection the phase made (nil before its cluster gates).
func (p *Phase) Cluster() *apply.Cluster { return p.cl }

// Rendered is the controllers' Deployments as the phase applies them,
// overlays included (nil before its render ran).
func (p *Phase) Rendered() []appsv1.Deployment {
	if p.out == nil || p.out.Overlay == nil {
		return nil
	}
	return p.out.Overlay.Final
}

// Before renders and proves the overlays, then checks the cluster.
func (p *Phase) Before(ctx context.Context, run *pipeline.Run) ([]verify.Check, error) {
	checks, err := p.render.Before(ctx, run)
	if err != nil || verify.Blocks(checks...) {
		return checks, err
	}
	out := p.render.Output
	p.out = out
	if p.objs, err = apply.ReadObjects(out.YAML); err != nil {
		return checks, err
	}
	if p.cl, err = p.connect(); err != nil {
		return checks, err
	}
	c := p.opts.Render.Components
	before, nsAbsent, operator := Before(ctx, p.cl, p.objs, BeforeOptions{
		Namespace: c.Namespace, MinKubernetes: p.opts.MinKubernetes, FluxVersion: c.FluxVersion, Force: p.opts.Force, YieldToOperator: p.opts.YieldToOperator})
	checks = append(checks, before...)
	if p.operator = operator; operator != "" {
		return checks, nil
	}
	p.newNamespaces = nil
	if nsAbsent {
		p.newNamespaces = []string{c.Namespace}
	}
	if verify.Blocks(checks...) {
		return checks, nil
	}
	if p.dropped, err = apply.StoredVersions(ctx, p.cl, p.objs); err != nil {
		return checks, err
	}
	return append(checks, StoredVersionsCheck(p.dropped, p.opts.MigrateCRDs)), nil
}

// Do plans (a server-side dry run per object, and the prune of an earlier
// install's leftovers) and, unless a dry run, migrates, applies and prunes.
func (p *Phase) Do(ctx context.Context, run *pipeline.Run) error {
	if p.operator != "" {
		return nil
	}
	r := run.Report
	// The plan and the search for leftovers only read: side by side.
	var plan []verify.ObjectChange
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		plan, err = apply.Plan(gctx, p.cl, p.objs, apply.PlanOptions{Migrating: p.dropped, NewNamespaces: p.newNamespaces})
		return err
	})
	g.Go(func() (err error) {
		p.stale, err = apply.FindStale(gctx, p.cl, p.objs, p.opts.Render.Components.Namespace, p.opts.PruneCRDs)
		return err
	})
	if err := g.Wait(); err != nil {
		return err
	}
	p.plan = apply.PlanStale(plan, p.stale)
	run.Planned(p.plan)
	pruning := len(p.stale.Delete)+len(p.stale.Kept) > 0
	if run.DryRun {
		if pruning {
			r.Add(PruneCheck(p.stale, true))
		}
		r.Add(dryRunCreates(ctx, p.cl, p.objs, p.plan, p.newNamespaces))
		// The phases after this one plan against what it would apply: the
		// CRDs, the namespace, the controllers' Deployments.
		run.Stage(p.objs...)
		return nil
	}
	if err := apply.Migrate(ctx, p.cl, p.dropped, p.opts.Timeout, run.Progress); err != nil {
		return err
	}
	applied, err := apply.Apply(ctx, p.cl, p.objs, p.plan, p.opts.Timeout)
	r.Objects = replaceObjects(r.Objects, applied)
	if err != nil {
		return err
	}
	pruned, err := apply.Prune(ctx, p.cl, p.stale)
	r.Objects = replaceObjects(r.Objects, pruned)
	if err != nil {
		return err
	}
	r.Changed = r.Changed || apply.Changed(applied) || apply.Changed(pruned)
	if pruning {
		r.Add(PruneCheck(p.stale, false))
	}
	return nil
}

// After waits for the rollouts and proves the live Deployments.
func (p *Phase) After(ctx context.Context, run *pipeline.Run) []verify.Check {
	if p.operator != "" {
		return nil // nothing applied: the operator's controllers are its to prove
	}
	var workloads []*unstructured.Unstructured
	for _, o := range p.objs {
		if o.GetKind() == "Deployment" {
			workloads = append(workloads, o)
		}
	}
	run.Progressf("waiting for %d Deployment(s) to roll out (timeout %s)", len(workloads), p.opts.Timeout)
	if err := wait.Rollouts(ctx, p.cl.Clients(), workloads, p.opts.Timeout, run.Progress); err != nil {
		return []verify.Check{GateRollout.Fail(err.Error()), GateFlagsLive.Skip("the rollouts did not finish")}
	}
	return After(ctx, p.cl, p.out.Overlay.Final)
}

// replaceObjects updates the plan's entries with what happened to them.
func replaceObjects(plan, done []verify.ObjectChange) []verify.ObjectChange {
	for _, d := range done {
		found := false
		for i := range plan {
			if plan[i].Object == d.Object {
				plan[i], found = d, true
				break
			}
		}
		if !found {
			plan = append(plan, d)
		}
	}
	return plan
}

var _ pipeline.Phase = (*Phase)(nil)
