package converge

import (
	"fmt"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"

	"github.com/homelab-ops/bootstrap/internal/fluxgraph"
)

// chain is flux-system ← a ← b (b depends on a, a on the root).
func chain() *fluxgraph.Graph {
	return fluxgraph.New([]*kustomizev1.Kustomization{ks("flux-system"), ks("a", "flux-system"), ks("b", "a")}, root, "flux-system")
}

func id(name string) NodeID { return NodeID{Namespace: "flux-system", Name: name} }

type world struct {
	t     *testing.T
	tr    *Tracker
	now   time.Time
	ks    map[NodeID]*kustomizev1.Kustomization
	src   Source
	token int
}

func newWorld(t *testing.T, g *fluxgraph.Graph, nudge bool, b Budget) *world {
	w := &world{t: t, now: time.Unix(1000, 0), ks: map[NodeID]*kustomizev1.Kustomization{}, src: readySource(rev1)}
	w.tr = NewTracker(g, w.now, nudge, 5, b)
	w.tr.tokenClock = func() string { w.token++; return fmt.Sprintf("token-%d", w.token) }
	return w
}

func (w *world) step(d time.Duration) Step {
	w.now = w.now.Add(d)
	return w.tr.Step(w.now, Snapshot{Kustomizations: w.ks, Sources: map[SourceRef]Source{w.src.Ref: w.src}})
}

func blocked(name, handled string, deps ...string) *kustomizev1.Kustomization {
	return with(converged(name, rev1, deps...), func(k *kustomizev1.Kustomization) {
		ready(k, "False", meta.DependencyNotReadyReason, fmt.Sprintf("dependency '%s' is not ready", deps[0]))
		k.Status.LastAppliedRevision = ""
		k.Status.LastHandledReconcileAt = handled
	})
}

func failing(name, rev, handled string) *kustomizev1.Kustomization {
	return with(converged(name, rev), func(k *kustomizev1.Kustomization) {
		ready(k, "False", meta.BuildFailedReason, "variable not set (strict mode): \"missing\"")
		k.Status.LastAppliedRevision = ""
		k.Status.LastHandledReconcileAt = handled
	})
}

func nudged(s Step) []string {
	var out []string
	for _, n := range s.Nudges {
		out = append(out, n.ID.Name+"="+n.Token)
	}
	return out
}

func TestTrackerNudgesBlockedDependentsOnce(t *testing.T) {
	w := newWorld(t, chain(), true, Budget{Retries: 2, Backoff: time.Second})
	w.ks[root] = with(converged("flux-system", rev1), func(k *kustomizev1.Kustomization) { ready(k, "Unknown", meta.ProgressingReason, "in progress") })
	w.ks[id("a")] = blocked("a", "", "flux-system/flux-system")
	if s := w.step(time.Second); len(s.Nudges) != 0 || s.Done {
		t.Fatalf("root progressing: want no nudge, got %v", nudged(s))
	}
	w.ks[root] = converged("flux-system", rev1)
	s := w.step(time.Second)
	if got := nudged(s); strings.Join(got, ",") != "a=token-1" {
		t.Fatalf("root converged: want a nudged once, got %v\n%s", got, strings.Join(s.Lines, "\n"))
	}
	// Token not handled yet: no second request.
	if s := w.step(time.Second); len(s.Nudges) != 0 {
		t.Fatalf("outstanding token: want no nudge, got %v", nudged(s))
	}
	// Handled, but the controller still saw a stale dependency: nudge again.
	w.ks[id("a")] = blocked("a", "token-1", "flux-system/flux-system")
	if s := w.step(time.Second); strings.Join(nudged(s), ",") != "a=token-2" {
		t.Fatalf("handled and still blocked: want a second nudge, got %v", nudged(s))
	}
	// Progressing is never nudged; b waits on a, so it is not nudged either.
	w.ks[id("a")] = with(converged("a", rev1, "flux-system"), func(k *kustomizev1.Kustomization) {
		ready(k, "Unknown", meta.ProgressingReason, "in progress")
		k.Status.LastHandledReconcileAt = "token-2"
	})
	w.ks[id("b")] = blocked("b", "", "flux-system/a")
	if s := w.step(time.Second); len(s.Nudges) != 0 {
		t.Fatalf("a progressing, b blocked on a: want no nudge, got %v", nudged(s))
	}
	w.ks[id("a")] = converged("a", rev1, "flux-system")
	if s := w.step(time.Second); strings.Join(nudged(s), ",") != "b=token-3" {
		t.Fatalf("a converged: want b nudged, got %v", nudged(s))
	}
	w.ks[id("b")] = converged("b", rev1, "a")
	s = w.step(time.Second)
	if !s.Done {
		t.Fatalf("all converged: want done\n%s", strings.Join(s.Lines, "\n"))
	}
	if p := w.tr.CriticalPath(); len(p) != 3 || p[0] != root || p[2] != id("b") {
		t.Fatalf("critical path %v", p)
	}
	tl := w.tr.Timelines()
	if tl[2].ID != id("b") || tl[2].Duration() != time.Second || len(tl[1].Nudges) != 2 {
		t.Fatalf("timelines %+v", tl)
	}
}

func TestTrackerNoNudgeWhenOff(t *testing.T) {
	w := newWorld(t, chain(), false, Budget{})
	w.ks[root] = converged("flux-system", rev1)
	w.ks[id("a")] = blocked("a", "", "flux-system/flux-system")
	if s := w.step(time.Second); len(s.Nudges) != 0 {
		t.Fatalf("--nudge=false: got %v", nudged(s))
	}
}

func TestTrackerFailingSpendsBudgetThenStuck(t *testing.T) {
	w := newWorld(t, chain(), true, Budget{Retries: 2, Backoff: time.Second, FailAfter: time.Hour})
	w.ks[root] = converged("flux-system", rev1)
	w.ks[id("a")] = failing("a", rev1, "")
	w.ks[id("b")] = blocked("b", "", "flux-system/a")
	s := w.step(time.Second)
	if len(s.Nudges) != 0 || s.Wake.IsZero() || s.Stuck {
		t.Fatalf("first failure: want a retry scheduled, not sent: %v wake %v stuck %t", nudged(s), s.Wake, s.Stuck)
	}
	s = w.step(time.Second) // backoff elapsed
	if strings.Join(nudged(s), ",") != "a=token-1" {
		t.Fatalf("want retry 1, got %v", nudged(s))
	}
	w.ks[id("a")] = failing("a", rev1, "token-1")
	if s = w.step(time.Second); len(s.Nudges) != 0 {
		t.Fatalf("retry 1 failed: next retry after 2s backoff, got %v", nudged(s))
	}
	if s = w.step(2 * time.Second); strings.Join(nudged(s), ",") != "a=token-2" {
		t.Fatalf("want retry 2, got %v", nudged(s))
	}
	w.ks[id("a")] = failing("a", rev1, "token-2")
	s = w.step(time.Second)
	if !s.Stuck || !w.tr.GaveUp(id("a")) || w.tr.GaveUp(id("b")) {
		t.Fatalf("budget spent: want stuck on a\n%s", strings.Join(s.Lines, "\n"))
	}
	if rc := w.tr.RootCause(id("b")); rc != id("a") {
		t.Fatalf("root cause of b: %s", rc)
	}
}

func TestTrackerFailureAtOldRevisionIsNotCounted(t *testing.T) {
	w := newWorld(t, chain(), true, Budget{Retries: 0, Backoff: time.Second, FailAfter: time.Second})
	w.ks[root] = converged("flux-system", rev2)
	w.src = readySource(rev2)
	w.ks[id("a")] = failing("a", rev1, "") // attempted rev1, source at rev2
	for range 3 {
		if s := w.step(time.Minute); s.Stuck || w.tr.GaveUp(id("a")) {
			t.Fatalf("a failure at an old revision spent the budget\n%s", strings.Join(s.Lines, "\n"))
		}
	}
}

func TestTrackerFailAfterWithoutNudge(t *testing.T) {
	w := newWorld(t, chain(), false, Budget{Retries: 2, FailAfter: 10 * time.Second})
	w.ks[root] = converged("flux-system", rev1)
	w.ks[id("a")] = failing("a", rev1, "")
	if s := w.step(time.Second); s.Stuck || s.Wake.IsZero() {
		t.Fatalf("want a wake at the budget's end, got stuck %t wake %v", s.Stuck, s.Wake)
	}
	if s := w.step(10 * time.Second); !s.Stuck {
		t.Fatalf("failing 10s: want stuck\n%s", strings.Join(s.Lines, "\n"))
	}
}

func TestTrackerTerminalIsImmediate(t *testing.T) {
	w := newWorld(t, chain(), true, Budget{Retries: 3, Backoff: time.Second, FailAfter: time.Hour})
	w.ks[root] = converged("flux-system", rev1)
	w.ks[id("a")] = with(converged("a", rev1, "flux-system"), func(k *kustomizev1.Kustomization) { k.Spec.Suspend = true })
	if s := w.step(time.Second); !s.Stuck || w.tr.Status(id("a")).State != Terminal {
		t.Fatalf("suspended: want stuck at once")
	}
}

func TestTrackerIndependentBranchKeepsGoing(t *testing.T) {
	g := fluxgraph.New([]*kustomizev1.Kustomization{ks("flux-system"), ks("a", "flux-system"), ks("c", "flux-system")}, root, "flux-system")
	w := newWorld(t, g, true, Budget{})
	w.ks[root] = converged("flux-system", rev1)
	w.ks[id("a")] = with(converged("a", rev1, "flux-system"), func(k *kustomizev1.Kustomization) { k.Spec.Suspend = true })
	w.ks[id("c")] = with(converged("c", rev1, "flux-system"), func(k *kustomizev1.Kustomization) { ready(k, "Unknown", meta.ProgressingReason, "") })
	if s := w.step(time.Second); s.Stuck {
		t.Fatal("c still progressing: not stuck yet")
	}
	w.ks[id("c")] = converged("c", rev1, "flux-system")
	if s := w.step(time.Second); !s.Stuck {
		t.Fatal("c converged, a terminal: want stuck")
	}
}

// TestTrackerTimelineNeverEligibleAfterConverged: a dependent seen converged
// while its dependency is momentarily not (a status seen out of order) keeps
// a timeline that does not run backwards; a new revision starts a new one.
func TestTrackerTimelineNeverEligibleAfterConverged(t *testing.T) {
	w := newWorld(t, chain(), false, Budget{})
	w.ks[root] = with(converged("flux-system", rev1), func(k *kustomizev1.Kustomization) { ready(k, "Unknown", meta.ProgressingReason, "") })
	w.ks[id("a")] = converged("a", rev1, "flux-system")
	w.step(time.Second)
	w.ks[root] = converged("flux-system", rev1)
	w.step(time.Second)
	tl := w.tr.Timelines()[1]
	if tl.ID != id("a") || tl.Duration() < 0 || tl.Eligible > tl.Converged {
		t.Fatalf("timeline runs backwards: %+v", tl)
	}
	// rev2: a is stale, then converges again; its timeline is the new walk.
	w.src = readySource(rev2)
	w.ks[root] = converged("flux-system", rev2)
	w.step(time.Second)
	w.ks[id("a")] = converged("a", rev2, "flux-system")
	w.step(2 * time.Second)
	tl = w.tr.Timelines()[1]
	if tl.Eligible != 3*time.Second || tl.Converged != 5*time.Second || tl.Duration() != 2*time.Second {
		t.Fatalf("new revision timeline %+v", tl)
	}
}
