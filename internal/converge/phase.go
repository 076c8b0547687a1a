package converge

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/internal/fluxgraph"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/internal/reconcile"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// Phase is step 4 as a pipeline phase: before-gate converge.graph, the walk
// (watches, nudges, budgets), after-gates converge.node/<ns>/<name>.
type Phase struct {
	// connect opens the cluster when the phase's turn comes (after the
	// phases before it in sync and up have made it reachable).
	connect func() (*apply.Cluster, error)
	cl      *apply.Cluster
	o       Options
	g       *fluxgraph.Graph
	tr      *Tracker
	// last snapshot, timed-out flag, events of failed nodes.
	snap     Snapshot
	timedOut bool
	elapsed  time.Duration
	nudges   int
	// listed is the live list Before read for a live graph (nil for a
	// declared one): status classifies from it instead of listing again.
	listed []*kustomizev1.Kustomization
}

var _ pipeline.Phase = (*Phase)(nil)

// Name is "converge".
func (p *Phase) Name() string { return PhaseName }

// Gates are converge.graph and the converge.node family.
func (p *Phase) Gates() []verify.Def { return []verify.Def{GateReachable, GateGraph, GateNode} }

// Graph is the graph Before built (nil before).
func (p *Phase) Graph() *fluxgraph.Graph { return p.g }

// Before builds the graph (from the repository, or the live cluster) and
// gates it.
func (p *Phase) Before(ctx context.Context, run *pipeline.Run) ([]verify.Check, error) {
	cl, err := p.connect()
	if err != nil {
		return nil, err
	}
	p.cl = cl
	// A cluster that does not answer is said at once, not after --timeout.
	if reach, _ := cl.Reachable(GateReachable); reach.Verdict != verify.Pass {
		return []verify.Check{reach}, nil
	}
	ks, from := p.o.Declared, p.o.From
	if ks == nil {
		var list kustomizev1.KustomizationList
		if err := p.cl.Client.List(ctx, &list, client.InNamespace(p.o.Namespace)); err != nil {
			return []verify.Check{GateGraph.Skip(fmt.Sprintf("cannot list the live Kustomizations (%v): check the kubeconfig and that Flux's CRDs are installed (bootstrap controllers)", err))}, nil
		}
		for i := range list.Items {
			ks = append(ks, &list.Items[i])
		}
		ks = p.selected(ks)
		p.listed = ks
		where := "namespace " + p.o.Namespace
		if p.o.Namespace == "" {
			where = "every namespace"
		}
		from = fmt.Sprintf("the live cluster %s (%s)", p.cl.Host, where)
	}
	if from == "" {
		from = "the repository"
	}
	hrs, err := p.helmReleases(ctx, ks)
	if err != nil {
		return []verify.Check{GateGraph.Skip(err.Error())}, nil
	}
	p.g = fluxgraph.NewWithHelmReleases(ks, hrs, p.o.Root, p.o.Namespace)
	live := p.o.Declared == nil && p.o.Select == nil
	if _, rooted := p.g.Nodes[p.o.Root]; live && rooted && len(p.g.NotAfterRoot) > 0 {
		// A live namespace may hold Kustomizations that are not this
		// environment's (another tool's, a test's): the walk is what the
		// root leads to, and the others are named, not failed.
		var keep []*kustomizev1.Kustomization
		var left []string
		for _, k := range ks {
			if id := fluxgraph.ID(k, p.o.Namespace); slices.Contains(p.g.NotAfterRoot, id) {
				left = append(left, id.String())
				continue
			}
			keep = append(keep, k)
		}
		p.g = fluxgraph.NewWithHelmReleases(keep, appliedBy(hrs, keep, p.o.Namespace), p.o.Root, p.o.Namespace)
		c := GraphCheck(p.g, from)
		c.Evidence = append(c.Evidence, fmt.Sprintf("not walked: %s (live Kustomizations the root %s does not lead to through dependsOn)", strings.Join(left, ", "), p.o.Root))
		return []verify.Check{c}, nil
	}
	return []verify.Check{GraphCheck(p.g, from)}, nil
}

// helmReleases are the HelmReleases the walk proves with ks: the declared
// ones, or, for a live graph, every live HelmRelease one of ks applied
// (kustomize-controller's labels on it). A selection (Options.Select: a
// sync's or a cutover's own Kustomizations) walks no HelmRelease. A
// cluster without helm-controller's CRD has none.
func (p *Phase) helmReleases(ctx context.Context, ks []*kustomizev1.Kustomization) ([]*helmv2.HelmRelease, error) {
	if p.o.Select != nil {
		return nil, nil
	}
	if p.o.Declared != nil {
		return p.o.DeclaredHelmReleases, nil
	}
	var list helmv2.HelmReleaseList
	if err := p.cl.Client.List(ctx, &list); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("cannot list the live HelmReleases (%v): check the kubeconfig's permissions", err)
	}
	hrs := make([]*helmv2.HelmRelease, 0, len(list.Items))
	for i := range list.Items {
		hrs = append(hrs, &list.Items[i])
	}
	return appliedBy(hrs, ks, p.o.Namespace), nil
}

// appliedBy keeps the HelmReleases whose applier (kustomize-controller's
// labels) is one of ks.
func appliedBy(hrs []*helmv2.HelmRelease, ks []*kustomizev1.Kustomization, defaultNS string) []*helmv2.HelmRelease {
	in := map[NodeID]bool{}
	for _, k := range ks {
		in[fluxgraph.ID(k, defaultNS)] = true
	}
	var out []*helmv2.HelmRelease
	for _, hr := range hrs {
		if in[fluxgraph.LabelledApplier(hr.GetLabels())] {
			out = append(out, hr)
		}
	}
	return out
}

// selected is what Options.Select keeps of ks, with every Kustomization
// they depend on (transitively): a dependency's state is what lets the walk
// nudge its dependent, so it is walked too.
func (p *Phase) selected(ks []*kustomizev1.Kustomization) []*kustomizev1.Kustomization {
	if p.o.Select == nil {
		return ks
	}
	g := fluxgraph.New(ks, p.o.Root, p.o.Namespace)
	keep := map[NodeID]bool{}
	for _, k := range ks {
		if p.o.Select(k) {
			id := fluxgraph.ID(k, p.o.Namespace)
			keep[id] = true
			for _, d := range g.Upstream(id) {
				keep[d] = true
			}
		}
	}
	var out []*kustomizev1.Kustomization
	for _, k := range ks {
		if keep[fluxgraph.ID(k, p.o.Namespace)] {
			out = append(out, k)
		}
	}
	return out
}

// Do walks the graph until every node converged, converge gave up on a
// node nothing else can get past, or the timeout. Driven by informers on
// Kustomizations and the sources the graph reads: every event re-evaluates
// every node. On a dry run it only prints the order.
func (p *Phase) Do(ctx context.Context, run *pipeline.Run) error {
	if run.DryRun {
		for i, line := range p.g.Describe() {
			run.Progressf("%2d. %s", i+1, line)
		}
		run.Report.Add(p.Planned()...)
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.o.Timeout)
	defer cancel()
	w, err := p.watch(ctx)
	if err != nil {
		return err
	}

	start := run.Now()
	p.tr = NewTracker(p.g, start, p.o.Nudge, p.o.MaxNudges, p.o.Budget)
	lc := p.readControllers(ctx)
	p.tr.AdditiveCEL = lc.additiveCEL
	run.Report.Facts["converge.requeue-dependency"] = lc.requeueText()
	run.Progressf("converge: %s, nudge %t, timeout %s; without a nudge the controllers re-check a blocked dependent every %s", p.count(), p.o.Nudge, p.o.Timeout, lc.requeueText())
	p.walk(ctx, run, w, start)
	p.elapsed = run.Now().Sub(start)
	p.record(run)
	run.Progress(p.summary())
	if p.o.GraphFile != "" {
		if err := WriteGraphFile(p.o.GraphFile, p.g, p.verdicts(ctx)); err != nil {
			run.Report.Warn(fmt.Sprintf("converge: --graph %s: %v", p.o.GraphFile, err))
		}
	}
	return nil
}

// walk steps the tracker on every event or wake-up until it is done or
// stuck, or ctx ends (p.timedOut). A failed nudge is a warning: the
// controller's own requeue still applies.
func (p *Phase) walk(ctx context.Context, run *pipeline.Run, w *watches, start time.Time) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		p.snap = p.snapshot(w)
		now := run.Now()
		step := p.tr.Step(now, p.snap)
		for _, l := range step.Lines {
			run.Progress(l)
		}
		for _, n := range step.Nudges {
			if err := p.nudge(ctx, n); err != nil {
				run.Progressf("[%6.1fs] %s: nudge failed: %v", now.Sub(start).Seconds(), n.ID, err)
				run.Report.Warn(fmt.Sprintf("converge: nudge of %s failed: %v (the controller's own requeue still applies)", n.ID, err))
				continue
			}
			// A nudge asks for a reconcile the controller would do anyway
			// (as `flux reconcile` does): no desired state changes, so it
			// is counted in the facts, not in changed.
			p.nudges++
		}
		if step.Done || step.Stuck {
			return
		}
		if !step.Wake.IsZero() {
			timer.Reset(max(step.Wake.Sub(run.Now()), time.Millisecond))
		}
		select {
		case <-w.kick:
		case <-timer.C:
		case <-ctx.Done():
			p.timedOut = true
		}
		if p.timedOut {
			return
		}
	}
}

// nudge asks a node to reconcile now (internal/reconcile: the one reconcile
// request, transient API errors retried within ctx).
func (p *Phase) nudge(ctx context.Context, n Nudge) error {
	var obj client.Object = &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: n.ID.Namespace, Name: n.ID.Name}}
	if n.ID.IsHelmRelease() {
		obj = &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: n.ID.Namespace, Name: n.ID.Name}}
	}
	return reconcile.Request(ctx, p.cl.Client, obj, n.Token, p.o.Retry)
}

// After is one converge.node/<ns>/<name> gate per node: pass when it
// converged, fail for the node that stopped it (with its evidence), skip
// for the nodes blocked by another ("blocked by <name>").
func (p *Phase) After(ctx context.Context, run *pipeline.Run) []verify.Check {
	if p.tr == nil {
		return nil
	}
	var out []verify.Check
	for _, id := range p.g.InOrder() {
		out = append(out, p.nodeCheck(ctx, id, true))
	}
	return out
}

// hasHelmReleases says the graph holds a HelmRelease.
func (p *Phase) hasHelmReleases() bool {
	return slices.ContainsFunc(p.g.IDs, NodeID.IsHelmRelease)
}

// count is the graph's size by kind, for progress lines.
func (p *Phase) count() string {
	hrs := 0
	for _, id := range p.g.IDs {
		if id.IsHelmRelease() {
			hrs++
		}
	}
	s := fmt.Sprintf("%d Kustomization(s)", len(p.g.IDs)-hrs)
	if hrs > 0 {
		s += fmt.Sprintf(", %d HelmRelease(s)", hrs)
	}
	return s
}
