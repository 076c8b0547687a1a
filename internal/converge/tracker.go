package converge

import (
	"context"
	"fmt"
	"slices"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"

	"github.com/homelab-ops/bootstrap/internal/fluxgraph"
	"github.com/homelab-ops/bootstrap/internal/fluxobj"
)

// Snapshot is the live state the tracker evaluates: every node's
// Kustomization or HelmRelease (absent when not created) and every source.
type Snapshot struct {
	Kustomizations map[NodeID]*kustomizev1.Kustomization
	HelmReleases   map[NodeID]*helmv2.HelmRelease
	Sources        map[SourceRef]Source
}

// classify is the node's state by its kind's rules.
func (s Snapshot) classify(id NodeID, src Source) Status {
	if id.IsHelmRelease() {
		return ClassifyHelmRelease(s.HelmReleases[id], src)
	}
	return Classify(s.Kustomizations[id], src)
}

// evidence is the node's live state by its kind.
func (s Snapshot) evidence(id NodeID, src Source) []string {
	if id.IsHelmRelease() {
		return HelmReleaseEvidence(s.HelmReleases[id], src)
	}
	return Evidence(s.Kustomizations[id], src)
}

// suspended says the node's object is suspended.
func (s Snapshot) suspended(id NodeID) bool {
	if id.IsHelmRelease() {
		hr := s.HelmReleases[id]
		return hr != nil && hr.Spec.Suspend
	}
	k := s.Kustomizations[id]
	return k != nil && k.Spec.Suspend
}

func (s Snapshot) source(ref SourceRef) Source {
	if src, ok := s.Sources[ref]; ok {
		return src
	}
	return Source{Ref: ref, Desc: "not found"}
}

// Budget is how long a failing node is given before converge gives up on it.
type Budget struct {
	// Retries is how many reconciles are requested after the first failure
	// at the node's current revision (with nudges on).
	Retries int
	// Backoff is the delay before the first retry; it doubles each time.
	Backoff time.Duration
	// FailAfter gives up on a node failing for this long, retried or not.
	FailAfter time.Duration
}

// Nudge is a reconcile request for a node.
type Nudge struct {
	ID    NodeID
	Token string
	// Why says what made the node eligible, e.g. "flux-system/cni converged".
	Why string
}

// Step is what one evaluation decided.
type Step struct {
	// Lines are progress lines: one per node state change.
	Lines []string
	// Nudges to send now.
	Nudges []Nudge
	// Done: every node converged.
	Done bool
	// Stuck: at least one node was given up, and every node not converged
	// depends on one (nothing can still make progress).
	Stuck bool
	// Wake is when a retry or a budget expires ("zero": no timer needed).
	Wake time.Time
}

// track is the tracker's memory of one node.
type track struct {
	st Status
	// changed is when st.State last changed.
	changed time.Time
	// eligible is when all its dependencies last became converged;
	// converged when it last became converged (zero: not now).
	eligible, converged time.Time
	// token is the last reconcile request sent; nudges counts them.
	token  string
	nudges int
	// nudgeLog records each nudge for evidence.
	nudgeLog []string
	// failing budget: since when, attempts seen failing, next retry.
	failingSince time.Time
	failRev      string
	attempts     int
	countedToken string
	nextRetry    time.Time
	// gaveUp: the budget is spent (or the node is terminal).
	gaveUp bool
	// src is its source at the last evaluation; ctrlReady says the
	// controller's own dependency check passes (a HelmRelease:
	// helm-controller's checkDependencies over the live dependencies).
	src       Source
	ctrlReady bool
}

// Tracker walks the graph: it classifies every node on every snapshot,
// keeps each node's timeline, decides nudges and retries, and spends each
// failing node's budget. It is pure: the runner feeds it snapshots.
type Tracker struct {
	// AdditiveCEL is helm-controller's AdditiveCELDependencyCheck gate
	// (off by default): how it reads a dependsOn readyExpr.
	AdditiveCEL bool

	g          *fluxgraph.Graph
	nudge      bool
	maxNudges  int
	budget     Budget
	start      time.Time
	nodes      map[NodeID]*track
	tokenClock func() string
}

// NewTracker starts tracking g at start.
func NewTracker(g *fluxgraph.Graph, start time.Time, nudge bool, maxNudges int, b Budget) *Tracker {
	t := &Tracker{g: g, nudge: nudge, maxNudges: maxNudges, budget: b, start: start, nodes: map[NodeID]*track{}}
	for _, id := range g.IDs {
		t.nodes[id] = &track{}
	}
	return t
}

func (t *Tracker) since(now time.Time) string {
	return fmt.Sprintf("%6.1fs", now.Sub(t.start).Seconds())
}

// depsConverged says whether every prerequisite of id (its dependencies
// and a HelmRelease's applier) is converged.
func (t *Tracker) depsConverged(id NodeID) bool {
	for _, d := range t.g.Prereqs(id) {
		if n, ok := t.nodes[d]; !ok || n.st.State != Converged {
			return false
		}
	}
	return true
}

// Step evaluates snap at now.
func (t *Tracker) Step(now time.Time, snap Snapshot) Step {
	var out Step
	order := t.g.InOrder()
	// Classify every node first, so dependency states are this snapshot's.
	for _, id := range order {
		n := t.nodes[id]
		n.src = snap.source(t.g.Nodes[id].Source)
		prev := n.st
		n.st = snap.classify(id, n.src)
		n.ctrlReady = t.controllerReady(id, snap)
		if n.st.State != prev.State || n.changed.IsZero() {
			n.changed = now
			if n.st.State == Converged {
				n.converged = now
			} else {
				n.converged = time.Time{}
				if prev.State == Converged {
					// A new revision or generation: a new walk for this node.
					n.eligible = time.Time{}
				}
			}
			line := fmt.Sprintf("[%s] %s: %s", t.since(now), id, n.st.State)
			if n.st.Why != "" {
				line += ": " + n.st.Why
			}
			out.Lines = append(out.Lines, line)
		}
	}
	for _, id := range order {
		n := t.nodes[id]
		switch {
		case n.st.State == Converged:
			// Keep when it became eligible; a node seen converged before
			// its dependencies were (a status seen out of order) is
			// eligible from its convergence.
			if n.eligible.IsZero() {
				n.eligible = n.converged
			}
		case t.depsConverged(id):
			if n.eligible.IsZero() {
				n.eligible = now
			}
		default:
			n.eligible = time.Time{}
		}
		t.budgetStep(now, id, n, &out)
		t.nudgeStep(now, id, n, &out)
	}
	out.Done = true
	for _, id := range order {
		if t.nodes[id].st.State != Converged {
			out.Done = false
		}
	}
	if !out.Done {
		out.Stuck = t.stuck()
	}
	return out
}

// budgetStep spends a failing node's budget, schedules its retries, and
// gives up on it when the budget is spent. Terminal nodes are given up at once.
func (t *Tracker) budgetStep(now time.Time, id NodeID, n *track, out *Step) {
	switch {
	case n.gaveUp:
		return
	case n.st.State == Terminal:
		n.gaveUp = true
		out.Lines = append(out.Lines, fmt.Sprintf("[%s] %s: giving up: terminal: %s", t.since(now), id, n.st.Why))
		return
	case n.st.State == Converged || n.st.State == Failing && n.st.Want != n.failRev && n.failRev != "":
		n.failingSince, n.attempts, n.failRev, n.countedToken, n.nextRetry = time.Time{}, 0, "", "", time.Time{}
	}
	if n.st.State != Failing || !n.st.Current {
		return
	}
	if n.failingSince.IsZero() {
		n.failingSince, n.failRev, n.attempts, n.countedToken = now, n.st.Want, 1, n.st.Handled
		n.nextRetry = now.Add(t.budget.Backoff)
	} else if n.token != "" && n.st.Handled == n.token && n.countedToken != n.token {
		// Our retry was handled and the node still fails at its revision.
		n.attempts++
		n.countedToken = n.token
		n.nextRetry = now.Add(t.budget.Backoff << min(n.attempts-1, 10))
	}
	spent := n.attempts > t.budget.Retries && t.nudge
	expired := t.budget.FailAfter > 0 && now.Sub(n.failingSince) >= t.budget.FailAfter
	if spent || expired {
		n.gaveUp = true
		how := fmt.Sprintf("failed %d attempt(s) at %s", n.attempts, n.st.Want)
		if expired && !spent {
			how = fmt.Sprintf("failing for %s at %s", now.Sub(n.failingSince).Round(time.Second), n.st.Want)
		}
		out.Lines = append(out.Lines, fmt.Sprintf("[%s] %s: giving up: %s: %s", t.since(now), id, how, n.st.Why))
		return
	}
	if t.budget.FailAfter > 0 {
		out.Wake = earliest(out.Wake, n.failingSince.Add(t.budget.FailAfter))
	}
	if !t.nudge || n.nudges >= t.maxNudges || t.outstanding(n) {
		return
	}
	if now.Before(n.nextRetry) {
		out.Wake = earliest(out.Wake, n.nextRetry)
		return
	}
	t.send(now, id, n, fmt.Sprintf("retry %d of %d after %s", n.attempts, t.budget.Retries, n.st.Reason), out)
}

// nudgeStep asks a blocked or stale node whose dependencies all converged
// to reconcile now instead of at the controller's next requeue. A
// progressing node is never nudged, and a node has one request outstanding
// at most (until status.lastHandledReconcileAt shows it was handled).
func (t *Tracker) nudgeStep(now time.Time, id NodeID, n *track, out *Step) {
	if !t.nudge || n.gaveUp || n.nudges >= t.maxNudges || t.outstanding(n) {
		return
	}
	if n.st.State != Blocked && n.st.State != Stale {
		return
	}
	if !t.depsConverged(id) && !(n.ctrlReady && t.applierConverged(id)) || !n.src.Ready || n.src.Revision == "" {
		return
	}
	why := "its source " + n.src.Ref.String() + " is at " + n.src.Revision
	if deps := t.g.Prereqs(id); len(deps) > 0 {
		latest := deps[0]
		for _, d := range deps {
			if t.nodes[d].converged.After(t.nodes[latest].converged) {
				latest = d
			}
		}
		why = latest.String() + " converged"
	}
	t.send(now, id, n, string(n.st.State)+", "+why, out)
}

// controllerReady is helm-controller's own dependency check for a
// HelmRelease (fluxobj.HelmReleaseDependencyReady over the live
// dependencies: a readyExpr may let it go before they converge); false for
// a Kustomization, whose nudge waits for converged dependencies.
func (t *Tracker) controllerReady(id NodeID, snap Snapshot) bool {
	hr := snap.HelmReleases[id]
	if !id.IsHelmRelease() || hr == nil || len(hr.Spec.DependsOn) == 0 {
		return false
	}
	for i, ref := range hr.Spec.DependsOn {
		dep := snap.HelmReleases[t.g.Nodes[id].DependsOn[i]]
		ok, err := fluxobj.HelmReleaseDependencyReady(context.Background(), hr, dep, ref, t.AdditiveCEL)
		if err != nil || !ok {
			return false
		}
	}
	return true
}

// applierConverged: a HelmRelease's applier, when the graph holds it, is
// converged (the HelmRelease it applies is the one in the repository).
func (t *Tracker) applierConverged(id NodeID) bool {
	by := t.g.Nodes[id].AppliedBy
	n, ok := t.nodes[by]
	return !id.IsHelmRelease() || !ok || n.st.State == Converged
}

func (t *Tracker) send(now time.Time, id NodeID, n *track, why string, out *Step) {
	n.token = now.UTC().Format(time.RFC3339Nano)
	if t.tokenClock != nil {
		n.token = t.tokenClock()
	}
	n.nudges++
	n.nudgeLog = append(n.nudgeLog, fmt.Sprintf("nudged at +%.1fs (%s)", now.Sub(t.start).Seconds(), why))
	out.Nudges = append(out.Nudges, Nudge{ID: id, Token: n.token, Why: why})
	out.Lines = append(out.Lines, fmt.Sprintf("[%s] %s: nudge (%s)", t.since(now), id, why))
}

// outstanding says a reconcile request of ours was not handled yet.
func (t *Tracker) outstanding(n *track) bool {
	return n.token != "" && n.st.Handled != n.token && n.st.State != Pending
}

// stuck: some node was given up and every node not converged is given up
// or depends (transitively) on one that is.
func (t *Tracker) stuck() bool {
	any := false
	for _, id := range t.g.IDs {
		n := t.nodes[id]
		if n.gaveUp {
			any = true
			continue
		}
		if n.st.State != Converged && t.doomedBy(id) == nil {
			return false
		}
	}
	return any
}

// doomedBy is the given-up node id depends on (transitively), or nil.
func (t *Tracker) doomedBy(id NodeID) *NodeID {
	for _, d := range t.g.Upstream(id) {
		if t.nodes[d].gaveUp {
			return &d
		}
	}
	return nil
}

// RootCause is the first node on id's chain of unconverged dependencies
// that is neither converged nor waiting on a dependency: the node to look
// at when id is blocked. It is id itself when its dependencies converged.
func (t *Tracker) RootCause(id NodeID) NodeID {
	seen := map[NodeID]bool{}
	for !seen[id] {
		seen[id] = true
		next := id
		for _, d := range t.g.Prereqs(id) {
			if n, ok := t.nodes[d]; ok && n.st.State != Converged {
				next = d
				break
			}
		}
		if next == id {
			return id
		}
		id = next
	}
	return id
}

// Status is a node's last classification.
func (t *Tracker) Status(id NodeID) Status { return t.nodes[id].st }

// GaveUp says whether converge gave up on id.
func (t *Tracker) GaveUp(id NodeID) bool { return t.nodes[id].gaveUp }

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}

// Timeline is one node's times, relative to the start.
type Timeline struct {
	ID NodeID
	// Eligible is when all its dependencies last converged (for a node
	// without dependencies: the start); Converged when it last converged.
	// Negative: never.
	Eligible, Converged time.Duration
	State               State
	Nudges              []string
}

// Duration is Converged - Eligible, or -1.
func (tl Timeline) Duration() time.Duration {
	if tl.Eligible < 0 || tl.Converged < 0 {
		return -1
	}
	return tl.Converged - tl.Eligible
}

// Timelines lists every node's timeline in graph order.
func (t *Tracker) Timelines() []Timeline {
	var out []Timeline
	rel := func(at time.Time) time.Duration {
		if at.IsZero() {
			return -1
		}
		return at.Sub(t.start)
	}
	for _, id := range t.g.InOrder() {
		n := t.nodes[id]
		out = append(out, Timeline{ID: id, Eligible: rel(n.eligible), Converged: rel(n.converged), State: n.st.State, Nudges: slices.Clone(n.nudgeLog)})
	}
	return out
}

// CriticalPath is the chain that decided the wall time: from the node that
// converged last, each step back to the dependency that converged last.
// Empty unless every node on it converged.
func (t *Tracker) CriticalPath() []NodeID {
	var last *NodeID
	for _, id := range t.g.InOrder() {
		n := t.nodes[id]
		if n.converged.IsZero() {
			return nil
		}
		if last == nil || !n.converged.Before(t.nodes[*last].converged) {
			id := id
			last = &id
		}
	}
	if last == nil {
		return nil
	}
	path := []NodeID{*last}
	for cur := *last; ; {
		deps := t.g.Prereqs(cur)
		if len(deps) == 0 {
			break
		}
		next := deps[0]
		for _, d := range deps {
			if t.nodes[d].converged.After(t.nodes[next].converged) {
				next = d
			}
		}
		path = append(path, next)
		cur = next
	}
	slices.Reverse(path)
	return path
}
