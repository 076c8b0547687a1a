package converge

import (
	"context"
	"fmt"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/internal/fluxgraph"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// StatusPhase is the converge phase read once, for `bootstrap status`: the
// same graph and graph gate, then one list of Kustomizations and one list
// per source kind, every node classified exactly as the walk classifies it
// (Classify, RootCause), with no nudge and no wait. It writes nothing.
type StatusPhase struct {
	*Phase
}

var _ pipeline.Phase = (*StatusPhase)(nil)

// NewStatusPhase is the read-once converge phase; o.Nudge is ignored.
func NewStatusPhase(connect func() (*apply.Cluster, error), o Options) *StatusPhase {
	o.Nudge = false
	return &StatusPhase{Phase: NewPhase(connect, o)}
}

// Do reads the live state once (the list Before made for a live graph, or
// one list of Kustomizations, and one list per source kind) and classifies
// every node.
func (p *StatusPhase) Do(ctx context.Context, run *pipeline.Run) error {
	snap, err := p.read(ctx)
	if err != nil {
		return err
	}
	p.snap = snap
	now := run.Now()
	p.tr = NewTracker(p.g, now, false, 0, Budget{})
	p.tr.Step(now, snap)
	conv := 0
	for _, id := range p.g.IDs {
		if p.tr.Status(id).State == Converged {
			conv++
		}
	}
	run.Report.Facts["converge.nodes"] = fmt.Sprint(len(p.g.Nodes))
	run.Report.Facts["converge.converged"] = fmt.Sprint(conv)
	return nil
}

// read is one snapshot from lists: no informer, no watch.
func (p *StatusPhase) read(ctx context.Context) (Snapshot, error) {
	s := Snapshot{Kustomizations: map[NodeID]*kustomizev1.Kustomization{}, HelmReleases: map[NodeID]*helmv2.HelmRelease{}, Sources: map[SourceRef]Source{}}
	ns := p.watchNamespace()
	ks := p.listed
	if ks == nil {
		var list kustomizev1.KustomizationList
		if err := p.cl.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return s, fmt.Errorf("list Kustomizations: %w", err)
		}
		for i := range list.Items {
			ks = append(ks, &list.Items[i])
		}
	}
	for _, k := range ks {
		id := NodeID{Namespace: k.Namespace, Name: k.Name}
		if _, ok := p.g.Nodes[id]; ok {
			s.Kustomizations[id] = k
		}
	}
	if p.hasHelmReleases() {
		var list helmv2.HelmReleaseList
		if err := p.cl.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return s, fmt.Errorf("list HelmReleases: %w", err)
		}
		for i := range list.Items {
			id := fluxgraph.HelmReleaseNodeID(&list.Items[i], "")
			if _, ok := p.g.Nodes[id]; ok {
				s.HelmReleases[id] = &list.Items[i]
			}
		}
	}
	sks, err := p.sourceKinds()
	if err != nil {
		return s, err
	}
	byKind := map[string]map[string]any{}
	for _, sk := range sks {
		list := sk.NewList()
		if err := p.cl.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			return s, fmt.Errorf("list %s: %w", sk.Kind, err)
		}
		objs := map[string]any{}
		for _, o := range sk.Items(list) {
			objs[o.GetNamespace()+"/"+o.GetName()] = o
		}
		byKind[sk.Kind] = objs
	}
	for _, ref := range p.g.Sources() {
		s.Sources[ref] = SourceOf(ref, byKind[ref.Kind][ref.Namespace+"/"+ref.Name])
	}
	return s, nil
}

// After is one converge.node/<ns>/<name> gate per node, for a cluster
// read once: converged passes; failing, stalled, suspended and missing
// nodes fail with their evidence; a node waiting on another names the root
// cause and warns (the root cause carries the failure); progressing and
// stale nodes warn, since no wait was made.
func (p *StatusPhase) After(ctx context.Context, _ *pipeline.Run) []verify.Check {
	if p.tr == nil {
		return nil
	}
	var out []verify.Check
	for _, id := range p.g.InOrder() {
		out = append(out, p.statusCheck(ctx, id))
	}
	return out
}

func (p *StatusPhase) statusCheck(ctx context.Context, id NodeID) verify.Check {
	d := GateNode.Each(id.String())
	st := p.tr.Status(id)
	src := p.snap.source(p.g.Nodes[id].Source)
	ev := p.snap.evidence(id, src)
	switch st.State {
	case Converged:
		return d.Pass(fmt.Sprintf("converged: Ready at %s, the current revision of %s", st.Want, src.Ref), ev...)
	case Failing:
		return d.Fail(fmt.Sprintf("failing: %s (attempted %s): fix it in the repository and push", st.Why, orNone(st.Attempted)), append(ev, p.warnings(ctx, id)...)...)
	case Terminal:
		if p.snap.suspended(id) {
			return d.Fail("suspended: "+resumeHint(id), ev...)
		}
		return d.Fail(st.Why+": "+stalledHint(id), append(ev, p.warnings(ctx, id)...)...)
	case Pending:
		return d.Fail(fmt.Sprintf("missing: the environment declares %s, but the cluster has no such %s: %s", id, id.KindName(), pendingHint(id)), ev...)
	}
	if rc := p.tr.RootCause(id); rc != id {
		rs := p.tr.Status(rc)
		return d.Warn(fmt.Sprintf("%s: waits on %s, the root cause (%s: %s)", st.State, rc, rs.State, rs.Why), ev...)
	}
	return d.Warn(fmt.Sprintf("%s: %s (read once, not waited for)", st.State, st.Why), ev...)
}
