package converge

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilwait "k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/internal/kube"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/internal/session"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// fakeController plays kustomize-controller for the phase test: it handles
// a reconcile request only (no requeue of its own, as if
// --requeue-dependency were very long), converging the node when every
// dependency converged and recording the token in lastHandledReconcileAt.
func fakeController(ctx context.Context, t *testing.T, c client.WithWatch, fail map[string]bool) {
	w, err := c.Watch(ctx, &kustomizev1.KustomizationList{}, client.InNamespace("flux-system"))
	if err != nil {
		t.Error(err)
		return
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			k, isK := ev.Object.(*kustomizev1.Kustomization)
			if !isK || ev.Type != watch.Modified && ev.Type != watch.Added {
				continue
			}
			token := k.Annotations[meta.ReconcileRequestAnnotation]
			if token == "" || token == k.Status.LastHandledReconcileAt {
				continue
			}
			allReady := true
			for _, d := range k.Spec.DependsOn {
				var dep kustomizev1.Kustomization
				if err := c.Get(ctx, client.ObjectKey{Namespace: "flux-system", Name: d.Name}, &dep); err != nil || !IsConverged(&dep, readySource(rev1)) {
					allReady = false
				}
			}
			var next *kustomizev1.Kustomization
			switch {
			case fail[k.Name]:
				next = failing(k.Name, rev1, token)
			case allReady:
				next = converged(k.Name, rev1)
			default:
				next = blocked(k.Name, token, "flux-system/"+k.Spec.DependsOn[0].Name)
			}
			k.Status = next.Status
			k.Status.LastHandledReconcileAt = token
			if err := c.Status().Update(ctx, k); err != nil && ctx.Err() == nil {
				t.Errorf("status update %s: %v", k.Name, err)
			}
		}
	}
}

func phaseWorld(t *testing.T, fail map[string]bool) (*apply.Cluster, context.Context, func()) {
	s, err := kube.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	src := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "flux-system", Generation: 1}}
	src.Status.Artifact, src.Status.ObservedGeneration = &meta.Artifact{Revision: rev1}, 1
	src.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", meta.SucceededReason, "stored artifact", 1)}
	rootK := converged("flux-system", rev1)
	a := blocked("a", "", "flux-system/flux-system")
	a.Spec.DependsOn = []kustomizev1.DependencyReference{{Name: "flux-system"}}
	b := blocked("b", "", "flux-system/a")
	b.Spec.DependsOn = []kustomizev1.DependencyReference{{Name: "a"}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(src, rootK, a, b).
		WithStatusSubresource(&kustomizev1.Kustomization{}, &sourcev1.GitRepository{}).Build()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	var wg sync.WaitGroup
	wg.Go(func() { fakeController(ctx, t, c, fail) })
	return &apply.Cluster{Client: noWatchList{c}, Clientset: k8sfake.NewClientset()}, ctx, func() { cancel(); wg.Wait() }
}

// noWatchList is the fake client declaring it cannot stream lists
// (client-go's watchlist protocol), as client-go's own fakes do.
type noWatchList struct{ client.WithWatch }

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }

func runPhase(t *testing.T, ctx context.Context, cl *apply.Cluster, o Options) (*verify.Report, []string) {
	var mu sync.Mutex
	var lines []string
	r := verify.NewReport("converge")
	run := &pipeline.Run{Report: r, Progress: func(l string) { mu.Lock(); lines = append(lines, l); mu.Unlock() }}
	o.Declared = []*kustomizev1.Kustomization{ks("flux-system"), ks("a", "flux-system"), ks("b", "a")}
	if err := pipeline.Execute(ctx, run, NewPhase(func() (*apply.Cluster, error) { return cl, nil }, o)); err != nil {
		t.Fatal(err)
	}
	return r, lines
}

// TestPhaseNudgesThroughWatches: with a controller that never requeues on
// its own, only the phase's nudges (sent on watch events) converge the
// chain; without them it times out with the blocked node failing and its
// dependent skipped.
func TestPhaseNudgesThroughWatches(t *testing.T) {
	cl, ctx, stop := phaseWorld(t, nil)
	defer stop()
	o := DefaultOptions()
	o.Timeout = 10 * time.Second
	r, lines := runPhase(t, ctx, cl, o)
	if session.ReportCode(r) != session.ExitOK || r.Facts["converge.nudges"] != "2" {
		var b strings.Builder
		_ = verify.WriteText(&b, r)
		t.Fatalf("exit %d, nudges %s\n%s\n%s", session.ReportCode(r), r.Facts["converge.nudges"], b.String(), strings.Join(lines, "\n"))
	}
	if r.Changed || !strings.Contains(r.Facts["converge.critical-path"], "flux-system/flux-system → flux-system/a → flux-system/b") {
		t.Fatalf("changed %t, facts %v", r.Changed, r.Facts)
	}
}

func TestPhaseWithoutNudgeTimesOut(t *testing.T) {
	cl, ctx, stop := phaseWorld(t, nil)
	defer stop()
	o := DefaultOptions()
	o.Nudge = false
	o.Timeout = time.Second
	t0 := time.Now()
	r, lines := runPhase(t, ctx, cl, o)
	a, b := find(r, "converge.node/flux-system/a"), find(r, "converge.node/flux-system/b")
	if session.ReportCode(r) != session.ExitFailed || a.Verdict != verify.Fail || !strings.Contains(a.Message, "not converged within 1s: blocked") ||
		b.Verdict != verify.Skip || !strings.Contains(b.Message, "blocked by flux-system/a") || time.Since(t0) > 5*time.Second {
		t.Fatalf("a: %+v\nb: %+v\n%s", a, b, strings.Join(lines, "\n"))
	}
}

func TestPhaseFailingNodeGivesUpWithinBudget(t *testing.T) {
	cl, ctx, stop := phaseWorld(t, map[string]bool{"a": true})
	defer stop()
	o := DefaultOptions()
	o.Timeout = 15 * time.Second
	o.Budget = Budget{Retries: 2, Backoff: 10 * time.Millisecond, FailAfter: time.Minute}
	t0 := time.Now()
	r, lines := runPhase(t, ctx, cl, o)
	a, b := find(r, "converge.node/flux-system/a"), find(r, "converge.node/flux-system/b")
	if a.Verdict != verify.Fail || !strings.Contains(a.Message, "variable not set (strict mode)") || !strings.Contains(strings.Join(a.Evidence, "\n"), "Ready=False BuildFailed") ||
		b.Verdict != verify.Skip || !strings.Contains(b.Message, "blocked by flux-system/a") || time.Since(t0) > 5*time.Second {
		t.Fatalf("after %s\na: %+v\nb: %+v\n%s", time.Since(t0), a, b, strings.Join(lines, "\n"))
	}
}

func find(r *verify.Report, id string) verify.Check {
	for _, c := range r.Checks {
		if c.ID == id {
			return c
		}
	}
	return verify.Check{ID: id, Verdict: "missing"}
}

// flakyPatches fails the first n nudges with err (as an API server that is
// restarting refuses them), then lets them through.
type flakyPatches struct {
	noWatchList
	n   *atomic.Int32
	err error
}

func (f flakyPatches) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if f.n.Add(-1) >= 0 {
		return f.err
	}
	return f.noWatchList.Patch(ctx, obj, patch, opts...)
}

// TestPhaseRetriesTransientNudge: nudges refused by an API server that is
// restarting (connection refused) are retried, so the chain converges with
// a controller that never requeues on its own, without a warning.
// Negative: a nudge refused for good (403) is not retried: it is lost, the
// run warns and times out — the retry is what converged the first.
func TestPhaseRetriesTransientNudge(t *testing.T) {
	refused := &url.Error{Op: "Patch", URL: "https://127.0.0.1:6443/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations/a",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}}
	for _, c := range []struct {
		name    string
		err     error
		timeout time.Duration
		wantOK  bool
	}{
		{"connection refused", refused, 10 * time.Second, true},
		{"forbidden", apierrors.NewForbidden(schema.GroupResource{Group: "kustomize.toolkit.fluxcd.io", Resource: "kustomizations"}, "a", errors.New("no")), 2 * time.Second, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl, ctx, stop := phaseWorld(t, nil)
			defer stop()
			left := &atomic.Int32{}
			left.Store(3)
			cl.Client = flakyPatches{noWatchList: cl.Client.(noWatchList), n: left, err: c.err}
			o := DefaultOptions()
			o.Timeout = c.timeout
			o.Retry = utilwait.Backoff{Duration: 10 * time.Millisecond, Factor: 1, Steps: 6}
			r, lines := runPhase(t, ctx, cl, o)
			warned := strings.Contains(strings.Join(r.Warnings, "\n"), "nudge of flux-system/a failed")
			var b strings.Builder
			_ = verify.WriteText(&b, r)
			if c.wantOK {
				if session.ReportCode(r) != session.ExitOK || r.Facts["converge.nudges"] != "2" || len(r.Warnings) > 0 || left.Load() >= 0 {
					t.Fatalf("exit %d, nudges %s, refusals left %d, warnings %q\n%s\n%s", session.ReportCode(r), r.Facts["converge.nudges"], left.Load(), r.Warnings, b.String(), strings.Join(lines, "\n"))
				}
				return
			}
			if session.ReportCode(r) != session.ExitFailed || !warned || left.Load() != 2 {
				t.Fatalf("exit %d, warned %t, refusals left %d (want 2: tried once)\n%s\n%s", session.ReportCode(r), warned, left.Load(), b.String(), strings.Join(lines, "\n"))
			}
		})
	}
}
