package converge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilwait "k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/internal/fluxgraph"
	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/internal/gate"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/internal/reconcile"
)

// Options drive the converge phase.
type Options struct {
	// Declared are the environment's Kustomizations from the repository
	// (e.g. rootsync.Build's), so nodes not created yet are known. Nil: the
	// graph is the live cluster's Kustomizations in Namespace.
	Declared []*kustomizev1.Kustomization
	// From names where Declared came from, for evidence ("clusters/dev").
	From string
	// Namespace defaults a Kustomization's namespace, and is the namespace
	// listed for a live graph ("" lists every namespace).
	Namespace string
	// Root is the root Kustomization (flux-system/flux-system).
	Root NodeID
	// Select, for a live graph, keeps only the Kustomizations it returns
	// true for (nil: every one listed). A selection is walked whole: it is
	// what the caller must prove, whether or not the root leads to it.
	Select func(*kustomizev1.Kustomization) bool
	// Timeout bounds the whole walk.
	Timeout time.Duration
	// Nudge asks blocked or stale dependents to reconcile as soon as their
	// dependencies converged, and failing nodes to retry.
	Nudge bool
	// MaxNudges bounds the reconcile requests per node.
	MaxNudges int
	// Budget is a failing node's retry budget.
	Budget Budget
	// Retry spaces the retries of a nudge the API server could not take
	// (reconcile.DefaultBackoff()).
	Retry utilwait.Backoff
	// GraphFile, when set, receives the graph with verdicts: Mermaid
	// (.md, .mmd) or DOT (.dot).
	GraphFile string
}

// DefaultOptions are the command's defaults.
func DefaultOptions() Options {
	return Options{
		Namespace: fluxobj.DefaultNamespace,
		Root:      NodeID{Namespace: fluxobj.DefaultNamespace, Name: fluxobj.DefaultRootName},
		Timeout:   10 * time.Minute,
		Nudge:     true,
		MaxNudges: 10,
		Budget:    Budget{Retries: 2, Backoff: 2 * time.Second, FailAfter: 2 * time.Minute},
		Retry:     reconcile.DefaultBackoff(),
	}
}

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

// NewPhase is the converge phase on cl.
func NewPhase(connect func() (*apply.Cluster, error), o Options) *Phase {
	d := DefaultOptions()
	if o.Root == (NodeID{}) {
		o.Root = d.Root
	}
	if o.Timeout <= 0 {
		o.Timeout = d.Timeout
	}
	if o.MaxNudges <= 0 {
		o.MaxNudges = d.MaxNudges
	}
	if o.Budget == (Budget{}) {
		o.Budget = d.Budget
	}
	return &Phase{connect: connect, o: o}
}

// Name is "converge".
func (p *Phase) Name() string { return PhaseName }

// Gates are converge.graph and the converge.node family.
func (p *Phase) Gates() []gate.Def { return []gate.Def{GateReachable, GateGraph, GateNode} }

// Graph is the graph Before built (nil before).
func (p *Phase) Graph() *fluxgraph.Graph { return p.g }

// Before builds the graph (from the repository, or the live cluster) and
// gates it.
func (p *Phase) Before(ctx context.Context, run *pipeline.Run) ([]gate.Check, error) {
	cl, err := p.connect()
	if err != nil {
		return nil, err
	}
	p.cl = cl
	// A cluster that does not answer is said at once, not after --timeout.
	if reach, _ := cl.Reachable(GateReachable); reach.Verdict != gate.Pass {
		return []gate.Check{reach}, nil
	}
	ks, from := p.o.Declared, p.o.From
	if ks == nil {
		var list kustomizev1.KustomizationList
		if err := p.cl.Client.List(ctx, &list, client.InNamespace(p.o.Namespace)); err != nil {
			return []gate.Check{GateGraph.Skip(fmt.Sprintf("cannot list the live Kustomizations (%v): check the kubeconfig and that Flux's CRDs are installed (bootstrap controllers)", err))}, nil
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
	p.g = fluxgraph.New(ks, p.o.Root, p.o.Namespace)
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
		p.g = fluxgraph.New(keep, p.o.Root, p.o.Namespace)
		c := GraphCheck(p.g, from)
		c.Evidence = append(c.Evidence, fmt.Sprintf("not walked: %s (live Kustomizations the root %s does not lead to through dependsOn)", strings.Join(left, ", "), p.o.Root))
		return []gate.Check{c}, nil
	}
	return []gate.Check{GraphCheck(p.g, from)}, nil
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
	run.Progressf("converge: %d Kustomization(s), nudge %t, timeout %s", len(p.g.Nodes), p.o.Nudge, p.o.Timeout)
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

// watches are Do's informers: on Kustomizations, on each source kind the
// graph reads, and kick, signalled (without blocking) on every event.
type watches struct {
	kick chan struct{}
	ks   cache.SharedIndexInformer
	src  map[string]cache.SharedIndexInformer
}

// watch starts the informers for ctx's lifetime and waits for their first
// list: a source kind converge cannot read is an input error.
func (p *Phase) watch(ctx context.Context) (*watches, error) {
	w := &watches{kick: make(chan struct{}, 1), src: map[string]cache.SharedIndexInformer{}}
	notify := func() {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	}
	ns := p.watchNamespace()
	w.ks = p.informer(ns, &kustomizev1.KustomizationList{}, &kustomizev1.Kustomization{})
	infs := []cache.SharedIndexInformer{w.ks}
	for _, s := range p.g.Sources() {
		if _, ok := w.src[s.Kind]; ok {
			continue
		}
		sk, err := fluxobj.KustomizationSourceKind(s.Kind)
		if err != nil {
			return nil, gate.InputErrorf("%s: %v", s, err)
		}
		inf := p.informer(ns, sk.NewList(), sk.New())
		w.src[s.Kind] = inf
		infs = append(infs, inf)
	}
	for _, inf := range infs {
		if _, err := inf.AddEventHandler(handler); err != nil {
			return nil, err
		}
		go inf.Run(ctx.Done())
	}
	synced := make([]cache.InformerSynced, 0, len(infs))
	for _, inf := range infs {
		synced = append(synced, inf.HasSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return nil, fmt.Errorf("the watches on Kustomizations and sources did not sync within %s: is the API server reachable and are Flux's CRDs installed?", p.o.Timeout)
	}
	return w, nil
}

// walk steps the tracker on every event or wake-up until it is done or
// stuck, or ctx ends (p.timedOut). A failed nudge is a warning: the
// controller's own requeue still applies.
func (p *Phase) walk(ctx context.Context, run *pipeline.Run, w *watches, start time.Time) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		p.snap = p.snapshot(w.ks, w.src)
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

// watchNamespace is the one namespace every node and source lives in, or
// "" (every namespace) when the graph spans several.
func (p *Phase) watchNamespace() string {
	seen := map[string]bool{}
	for _, id := range p.g.IDs {
		seen[id.Namespace] = true
		seen[p.g.Nodes[id].Source.Namespace] = true
	}
	if len(seen) == 1 {
		for ns := range seen {
			return ns
		}
	}
	return metav1.NamespaceAll
}

// informer is a shared informer on namespace ns ("" for every namespace)
// for one Flux type, listing and watching through the controller-runtime
// client.
func (p *Phase) informer(ns string, list client.ObjectList, obj client.Object) cache.SharedIndexInformer {
	c := p.cl.Client
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			l := list.DeepCopyObject().(client.ObjectList)
			return l, c.List(ctx, l, &client.ListOptions{Namespace: ns, Raw: &o})
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return c.Watch(ctx, list.DeepCopyObject().(client.ObjectList), &client.ListOptions{Namespace: ns, Raw: &o})
		},
	}
	// A client that declares it cannot stream lists (a fake, in tests) gets
	// a plain list then watch; the API server gets client-go's default.
	return cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, c), obj, 0, cache.Indexers{})
}

// artifactSource is a source with an artifact (fluxobj.Source's kinds).
type artifactSource interface {
	fluxobj.Object
	GetArtifact() *meta.Artifact
}

func (p *Phase) snapshot(ksInf cache.SharedIndexInformer, srcInf map[string]cache.SharedIndexInformer) Snapshot {
	s := Snapshot{Kustomizations: map[NodeID]*kustomizev1.Kustomization{}, Sources: map[SourceRef]Source{}}
	for _, id := range p.g.IDs {
		if o, ok, _ := ksInf.GetStore().GetByKey(id.Namespace + "/" + id.Name); ok {
			s.Kustomizations[id] = o.(*kustomizev1.Kustomization)
		}
	}
	for _, ref := range p.g.Sources() {
		var obj any
		if o, ok, _ := srcInf[ref.Kind].GetStore().GetByKey(ref.Namespace + "/" + ref.Name); ok {
			obj = o
		}
		s.Sources[ref] = SourceOf(ref, obj)
	}
	return s
}

// SourceOf is what the predicate reads of a source object (nil: not found).
func SourceOf(ref SourceRef, o any) Source {
	src := Source{Ref: ref, Desc: "not found"}
	if as, ok := o.(artifactSource); ok {
		src.Found = true
		src.Ready, src.Desc = fluxobj.Ready(as)
		if src.Revision = fluxobj.ArtifactRevision(as); src.Revision != "" {
			src.Desc += "; artifact " + src.Revision
		} else {
			src.Desc += "; no artifact"
		}
	}
	return src
}

// nudge asks a node to reconcile now (internal/reconcile: the one reconcile
// request, transient API errors retried within ctx).
func (p *Phase) nudge(ctx context.Context, n Nudge) error {
	obj := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: n.ID.Namespace, Name: n.ID.Name}}
	return reconcile.Request(ctx, p.cl.Client, obj, n.Token, p.o.Retry)
}

// summary is the walk's outcome in one line.
func (p *Phase) summary() string {
	conv, gaveUp := 0, []string{}
	for _, id := range p.g.IDs {
		switch {
		case p.tr.Status(id).State == Converged:
			conv++
		case p.tr.GaveUp(id):
			gaveUp = append(gaveUp, id.String())
		}
	}
	s := fmt.Sprintf("converge: %d/%d converged in %.1fs, %d nudge(s)", conv, len(p.g.Nodes), p.elapsed.Seconds(), p.nudges)
	switch {
	case len(gaveUp) > 0:
		s += "; gave up on " + strings.Join(gaveUp, ", ")
	case p.timedOut:
		s += fmt.Sprintf("; timed out (--timeout %s)", p.o.Timeout)
	}
	return s
}

// record writes the facts and the timeline.
func (p *Phase) record(run *pipeline.Run) {
	f := run.Report.Facts
	conv := 0
	for _, id := range p.g.IDs {
		if p.tr.Status(id).State == Converged {
			conv++
		}
	}
	f["converge.nodes"] = fmt.Sprint(len(p.g.Nodes))
	f["converge.converged"] = fmt.Sprint(conv)
	f["converge.nudges"] = fmt.Sprint(p.nudges)
	f["converge.duration"] = p.elapsed.Round(time.Millisecond).String()
	run.Progress("timeline (since converge started: eligible = its dependencies converged):")
	for _, tl := range p.tr.Timelines() {
		line := timelineText(tl)
		f["converge.timeline."+tl.ID.String()] = line
		run.Progressf("  %-40s %s", tl.ID, line)
	}
	if cp := p.tr.CriticalPath(); len(cp) > 0 {
		var names []string
		for _, id := range cp {
			names = append(names, id.String())
		}
		txt := fmt.Sprintf("%s (%.1fs)", strings.Join(names, " → "), p.elapsed.Seconds())
		f["converge.critical-path"] = txt
		run.Progress("critical path: " + txt)
	}
}

func timelineText(tl Timeline) string {
	at := func(d time.Duration) string {
		if d < 0 {
			return "never"
		}
		return fmt.Sprintf("+%.1fs", d.Seconds())
	}
	s := fmt.Sprintf("eligible %s, converged %s", at(tl.Eligible), at(tl.Converged))
	if d := tl.Duration(); d >= 0 {
		s += fmt.Sprintf(" (%.1fs)", d.Seconds())
	} else {
		s += " (" + string(tl.State) + ")"
	}
	if len(tl.Nudges) > 0 {
		s += fmt.Sprintf(", %d nudge(s)", len(tl.Nudges))
	}
	return s
}

// After is one converge.node/<ns>/<name> gate per node: pass when it
// converged, fail for the node that stopped it (with its evidence), skip
// for the nodes blocked by another ("blocked by <name>").
func (p *Phase) After(ctx context.Context, run *pipeline.Run) []gate.Check {
	if p.tr == nil {
		return nil
	}
	var out []gate.Check
	for _, id := range p.g.InOrder() {
		out = append(out, p.nodeCheck(ctx, id, true))
	}
	return out
}

func (p *Phase) nodeCheck(ctx context.Context, id NodeID, events bool) gate.Check {
	d := GateNode.Each(id.String())
	st := p.tr.Status(id)
	k, src := p.snap.Kustomizations[id], p.snap.source(p.g.Nodes[id].Source)
	var tl Timeline
	for _, t := range p.tr.Timelines() {
		if t.ID == id {
			tl = t
		}
	}
	ev := append([]string{"timeline: " + timelineText(tl)}, tl.Nudges...)
	if st.State == Converged {
		return d.Pass(fmt.Sprintf("Ready at %s, the current revision of %s", st.Want, src.Ref), ev...)
	}
	if by := p.tr.doomedBy(id); by != nil {
		return d.Skip(fmt.Sprintf("blocked by %s (converge gave up on it); not checked", *by), append(ev, Evidence(k, src)...)...)
	}
	if rc := p.tr.RootCause(id); rc != id {
		return d.Skip(fmt.Sprintf("blocked by %s (%s); not checked", rc, p.tr.Status(rc).State), append(ev, Evidence(k, src)...)...)
	}
	ev = append(ev, Evidence(k, src)...)
	if events {
		ev = append(ev, p.warnings(ctx, id)...)
	}
	var msg string
	switch {
	case st.State == Terminal && k != nil && k.Spec.Suspend:
		msg = fmt.Sprintf("%s is suspended: resume it (spec.suspend: false, or `flux resume kustomization %s -n %s`), or drop it from the environment", id, id.Name, id.Namespace)
	case st.State == Terminal:
		msg = fmt.Sprintf("%s: fix the Kustomization's spec in the repository: a stalled object is not retried", st.Why)
	case p.tr.GaveUp(id):
		msg = fmt.Sprintf("%s (failed at %s after its retry budget): fix it in the repository and push", st.Why, orNone(st.Attempted))
	case st.State == Pending:
		msg = fmt.Sprintf("not created within %s: its dependencies converged, but no Kustomization %s exists: is it in what the root applies (and is the root at the revision you expect)?", p.o.Timeout, id)
	default:
		msg = fmt.Sprintf("not converged within %s: %s: %s", p.o.Timeout, st.State, st.Why)
	}
	return d.Fail(msg, ev...)
}

// warnings are the node's most recent Warning events, for evidence.
func (p *Phase) warnings(ctx context.Context, id NodeID) []string {
	if p.cl.Clientset == nil {
		return nil
	}
	list, err := p.cl.Clientset.CoreV1().Events(id.Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=Kustomization,involvedObject.name=" + id.Name + ",type=" + corev1.EventTypeWarning,
	})
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return []string{"warning events: not read (timed out)"}
		}
		return []string{"warning events: not read: " + err.Error()}
	}
	items := list.Items
	sort.Slice(items, func(i, j int) bool { return eventTime(items[i]).After(eventTime(items[j])) })
	var out []string
	for i, e := range items {
		if i == 3 {
			break
		}
		out = append(out, fmt.Sprintf("event %s %s (×%d, %s): %s", e.Type, e.Reason, max(e.Count, 1), eventTime(e).UTC().Format(time.RFC3339), strings.TrimSpace(e.Message)))
	}
	if len(out) == 0 {
		out = append(out, "no Warning events")
	}
	return out
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// verdicts are the node gates' verdicts with a short label, for --graph.
func (p *Phase) verdicts(ctx context.Context) map[NodeID]NodeVerdict {
	out := map[NodeID]NodeVerdict{}
	for _, tl := range p.tr.Timelines() {
		c := p.nodeCheck(ctx, tl.ID, false)
		label := string(tl.State)
		if d := tl.Duration(); d >= 0 {
			label = fmt.Sprintf("%s %.1fs", label, d.Seconds())
		}
		out[tl.ID] = NodeVerdict{Verdict: c.Verdict, Label: label}
	}
	return out
}
