package converge

import (
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/homelab-ops/bootstrap/internal/fluxgraph"
	"github.com/homelab-ops/bootstrap/internal/fluxobj"
)

const (
	ociDigest1 = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	ociDigest2 = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	chartRev1  = "1.0.0@" + ociDigest1
	chartRev2  = "1.0.1@" + ociDigest2
)

// chartSource is the OCIRepository apps/cni-chart serving rev.
func chartSource(rev string) Source {
	return Source{Ref: SourceRef{Kind: "OCIRepository", Namespace: "kube-system", Name: "cni-chart"}, Found: true, Ready: true, Revision: rev, Desc: "Ready; artifact " + rev}
}

// hrConverged is HelmRelease kube-system/cni, generation 2, released from
// the OCI chart 1.0.0 at ociDigest1, as helm-controller v1.6.4 records it
// (status.history[0].ociDigest from mutateChartWithSourceRevision).
func hrConverged(name string, deps ...string) *helmv2.HelmRelease {
	hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", Generation: 2,
		Labels: map[string]string{fluxgraph.AppliedByNameLabel: "cilium", fluxgraph.AppliedByNamespaceLabel: "flux-system"}}}
	hr.Spec.ChartRef = &helmv2.CrossNamespaceSourceReference{Kind: "OCIRepository", Name: "cni-chart"}
	for _, d := range deps {
		hr.Spec.DependsOn = append(hr.Spec.DependsOn, meta.DependencyReference{Name: d})
	}
	hr.Status.ObservedGeneration = 2
	hr.Status.LastAttemptedRevision = "1.0.0"
	hr.Status.History = helmv2.Snapshots{{Name: name, Namespace: "kube-system", Version: 1, ChartName: "cni", ChartVersion: "1.0.0", OCIDigest: ociDigest1, Status: "deployed"}}
	hr.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", helmv2.InstallSucceededReason, "Helm install succeeded for release kube-system/cni.v1 with chart cni@1.0.0", 2)}
	return hr
}

func withHR(hr *helmv2.HelmRelease, f func(*helmv2.HelmRelease)) *helmv2.HelmRelease {
	f(hr)
	return hr
}

func hrReady(hr *helmv2.HelmRelease, status, reason, msg string) {
	hr.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, status, reason, msg, hr.Generation)}
}

type helmCase struct {
	name string
	hr   *helmv2.HelmRelease
	src  Source
	want State
	why  string
	cur  bool
}

// helmCases cover every state helm-controller v1.6.4 leaves a HelmRelease
// in (internal/controller/helmrelease_controller.go reconcile and
// reconcileRelease), and one case per clause of the predicate.
func helmCases() []helmCase {
	return []helmCase{
		{name: "converged", hr: hrConverged("cni"), src: chartSource(chartRev1), want: Converged},
		{name: "not created", src: chartSource(chartRev1), want: Pending},
		{name: "suspended", hr: withHR(hrConverged("cni"), func(hr *helmv2.HelmRelease) { hr.Spec.Suspend = true }), src: chartSource(chartRev1), want: Terminal, why: "suspended"},
		// The CRD defaults status.observedGeneration to -1: new and not
		// reconciled yet.
		{name: "new, not reconciled", hr: withHR(hrConverged("cni"), func(hr *helmv2.HelmRelease) {
			hr.Status = helmv2.HelmReleaseStatus{ObservedGeneration: -1}
		}), src: chartSource(chartRev1), want: Progressing, why: "no Ready condition"},
		{name: "spec changed, Ready at the old generation", hr: withHR(hrConverged("cni"), func(hr *helmv2.HelmRelease) { hr.Generation = 3 }),
			src: chartSource(chartRev1), want: Stale, why: "not observed its generation"},
		{name: "reconciling", hr: withHR(hrConverged("cni"), func(hr *helmv2.HelmRelease) {
			hr.Status.Conditions = append(hr.Status.Conditions, cond(meta.ReconcilingCondition, "True", meta.ProgressingReason, "Fulfilling prerequisites", 2))
		}), src: chartSource(chartRev1), want: Progressing, why: "reconciling"},
		{name: "the source serves a new chart", hr: hrConverged("cni"), src: chartSource(chartRev2), want: Stale, why: "its source serves " + chartRev2},
		{name: "the same tag at a new digest", hr: hrConverged("cni"), src: chartSource("1.0.0@" + ociDigest2), want: Stale},
		{name: "chart source not Ready", hr: hrConverged("cni"), src: Source{Ref: chartSource("").Ref, Found: true, Desc: "Ready=Unknown"}, want: Progressing, why: "waiting for its chart source"},
		{name: "chart source failed", hr: withHR(hrConverged("cni"), func(hr *helmv2.HelmRelease) {
			hrReady(hr, "False", "SourceNotReady", "OCIRepository 'kube-system/cni-chart' is not ready")
		}), src: Source{Ref: chartSource("").Ref, Found: true, Failed: true, Desc: "Ready=False OCIArtifactPullFailed: not found"}, want: Failing, why: "failed: Ready=False OCIArtifactPullFailed", cur: true},
		{name: "chart source missing", hr: withHR(hrConverged("cni"), func(hr *helmv2.HelmRelease) {
			hrReady(hr, "False", helmv2.ArtifactFailedReason, "could not get Source object: not found")
		}), src: Source{Ref: chartSource("").Ref, Desc: "not found"}, want: Failing, why: "ArtifactFailed: could not get Source object: not found", cur: true},
		{name: "chart source waits for the source", hr: withHR(hrConverged("cni"), func(hr *helmv2.HelmRelease) {
			hrReady(hr, "False", "SourceNotReady", "OCIRepository 'kube-system/cni-chart' is not ready")
		}), src: Source{Ref: chartSource("").Ref, Desc: "not found"}, want: Failing, why: "does not exist", cur: true},
		{name: "finishing: Ready at the generation, status behind", hr: withHR(hrConverged("cni"), func(hr *helmv2.HelmRelease) {
			hr.Generation = 3
			hr.Status.Conditions[0].ObservedGeneration = 3
		}), src: chartSource(chartRev1), want: Progressing, why: "finishing"},
		{name: "Ready but stalled", hr: withHR(hrConverged("cni"), func(hr *helmv2.HelmRelease) {
			hr.Status.Conditions = append(hr.Status.Conditions, cond(meta.StalledCondition, "True", "AccessDenied", "cross-namespace references are not allowed", 2))
		}), src: chartSource(chartRev1), want: Terminal, why: "stalled: AccessDenied"},
		// source-controller keeps the last artifact while it fails to get
		// a new one: not converged on an old artifact of a failing source.
		{name: "chart source failing with its old artifact", hr: hrConverged("cni"),
			src: Source{Ref: chartSource("").Ref, Found: true, Revision: chartRev1, Desc: "Ready=False; artifact " + chartRev1}, want: Progressing, why: "waiting for its chart source"},
		{name: "blocked on a dependency", hr: withHR(hrConverged("cni", "db"), func(hr *helmv2.HelmRelease) {
			hrReady(hr, "False", helmv2.DependencyNotReadyReason, "dependency 'kube-system/db' is not ready")
		}), src: chartSource(chartRev1), want: Blocked, why: "dependency 'kube-system/db' is not ready"},
		{name: "install failed, remediation left", hr: withHR(hrConverged("cni"), func(hr *helmv2.HelmRelease) {
			hrReady(hr, "False", helmv2.InstallFailedReason, "Helm install failed for release kube-system/cni with chart cni@1.0.0: DaemonSet is invalid")
			hr.Status.InstallFailures = 1
		}), src: chartSource(chartRev1), want: Failing, why: "InstallFailed: Helm install failed for release kube-system/cni with chart cni@1.0.0: DaemonSet is invalid (install failures 1", cur: true},
		{name: "retries exhausted", hr: withHR(hrConverged("cni"), func(hr *helmv2.HelmRelease) {
			hrReady(hr, "False", helmv2.InstallFailedReason, "Helm install failed")
			hr.Status.Conditions = append(hr.Status.Conditions, cond(meta.StalledCondition, "True", "RetriesExceeded", "Failed to install after 1 attempt(s)", 2))
			hr.Status.InstallFailures = 1
		}), src: chartSource(chartRev1), want: Terminal, why: "stalled: RetriesExceeded: Failed to install after 1 attempt(s) (install failures 1"},
		{name: "failure at an old generation is not current", hr: withHR(hrConverged("cni"), func(hr *helmv2.HelmRelease) {
			hrReady(hr, "False", helmv2.UpgradeFailedReason, "Helm upgrade failed")
			hr.Generation = 3
		}), src: chartSource(chartRev1), want: Failing, why: "UpgradeFailed"},
	}
}

func TestClassifyHelmRelease(t *testing.T) {
	for _, tc := range helmCases() {
		t.Run(tc.name, func(t *testing.T) {
			st := ClassifyHelmRelease(tc.hr, tc.src)
			if st.State != tc.want || !strings.Contains(st.Why, tc.why) || st.Current != tc.cur {
				t.Fatalf("got %s (current %t): %q; want %s (current %t) with %q", st.State, st.Current, st.Why, tc.want, tc.cur, tc.why)
			}
			if got := IsHelmReleaseConverged(tc.hr, tc.src); got != (tc.want == Converged) {
				t.Fatalf("IsHelmReleaseConverged = %t, want %t", got, tc.want == Converged)
			}
		})
	}
}

// hrObject is hr as the model's Object, nil when hr is (not created).
func hrObject(hr *helmv2.HelmRelease) fluxobj.Object {
	if hr == nil {
		return nil
	}
	return hr
}

// TestHelmReleaseClausesLoadBearing: the predicate without any one clause
// gets at least one case wrong.
func TestHelmReleaseClausesLoadBearing(t *testing.T) {
	for i, c := range helmClauses {
		variant := append(append([]fluxobj.Rule{}, helmClauses[:i]...), helmClauses[i+1:]...)
		var wrong []string
		for _, tc := range helmCases() {
			if ok, _ := fluxobj.Holds(variant, hrObject(tc.hr), tc.src); ok != (tc.want == Converged) {
				wrong = append(wrong, tc.name)
			}
		}
		if len(wrong) == 0 {
			t.Errorf("clause %q is not load-bearing", c.ID)
		}
	}
}

// TestTrackerHelmReleaseChain: the walk orders a HelmRelease after its
// applier and its dependsOn, nudges a blocked one the moment its
// dependency converges (helm-controller itself would wait out
// --requeue-dependency), and the critical path runs through both kinds.
func TestTrackerHelmReleaseChain(t *testing.T) {
	kss := []*kustomizev1.Kustomization{ks("flux-system"), ks("cilium", "flux-system")}
	cni := hrConverged("cni")
	agent := hrConverged("agent", "cni")
	g := fluxgraph.NewWithHelmReleases(kss, []*helmv2.HelmRelease{cni, agent}, root, "flux-system")
	w := newWorld(t, g, true, Budget{Retries: 1, Backoff: time.Second, FailAfter: time.Minute})
	hrs := map[NodeID]*helmv2.HelmRelease{}
	cniID, agentID := fluxgraph.HelmReleaseNodeID(cni, ""), fluxgraph.HelmReleaseNodeID(agent, "")
	src := chartSource(chartRev1)
	step := func(d time.Duration) Step {
		w.now = w.now.Add(d)
		return w.tr.Step(w.now, Snapshot{Kustomizations: w.ks, HelmReleases: hrs, Sources: map[SourceRef]Source{w.src.Ref: w.src, src.Ref: src}})
	}
	w.ks[id("flux-system")] = converged("flux-system", rev1)
	w.ks[id("cilium")] = converged("cilium", rev1, "flux-system")
	hrs[cniID] = withHR(hrConverged("cni"), func(hr *helmv2.HelmRelease) {
		hr.Status = helmv2.HelmReleaseStatus{ObservedGeneration: -1}
	})
	hrs[agentID] = withHR(hrConverged("agent", "cni"), func(hr *helmv2.HelmRelease) {
		hrReady(hr, "False", helmv2.DependencyNotReadyReason, "dependency 'kube-system/cni' is not ready")
		hr.Status.History = nil
	})
	if s := step(time.Second); len(s.Nudges) != 0 || s.Done {
		t.Fatalf("nudged %v before cni converged", nudged(s))
	}
	hrs[cniID] = hrConverged("cni")
	s := step(time.Second)
	if got := strings.Join(nudged(s), ","); got != "agent=token-1" {
		t.Fatalf("nudges %q, want agent nudged once cni converged", got)
	}
	hrs[agentID] = withHR(hrConverged("agent", "cni"), func(hr *helmv2.HelmRelease) { hr.Status.LastHandledReconcileAt = "token-1" })
	if s := step(time.Second); !s.Done {
		t.Fatalf("not done: %v", s.Lines)
	}
	var cp []string
	for _, n := range w.tr.CriticalPath() {
		cp = append(cp, n.String())
	}
	if got := strings.Join(cp, " → "); got != "flux-system/flux-system → flux-system/cilium → HelmRelease/kube-system/cni → HelmRelease/kube-system/agent" {
		t.Errorf("critical path %s", got)
	}
}

// TestTrackerHelmReadyExprNudgesEarly: with a readyExpr, helm-controller
// lets the dependent go on its expression alone (AdditiveCELDependencyCheck
// off), so the walk nudges then, not when the dependency converges.
func TestTrackerHelmReadyExprNudgesEarly(t *testing.T) {
	for _, additive := range []bool{false, true} {
		kss := []*kustomizev1.Kustomization{ks("flux-system")}
		db := hrConverged("db")
		db.Labels[fluxgraph.AppliedByNameLabel] = "flux-system"
		web := hrConverged("web", "db")
		web.Labels[fluxgraph.AppliedByNameLabel] = "flux-system"
		web.Spec.DependsOn[0].ReadyExpr = "dep.metadata.generation == 2"
		g := fluxgraph.NewWithHelmReleases(kss, []*helmv2.HelmRelease{db, web}, root, "flux-system")
		w := newWorld(t, g, true, Budget{Retries: 1, Backoff: time.Second, FailAfter: time.Minute})
		w.tr.AdditiveCEL = additive
		src := chartSource(chartRev1)
		w.ks[id("flux-system")] = converged("flux-system", rev1)
		dbID, webID := fluxgraph.HelmReleaseNodeID(db, ""), fluxgraph.HelmReleaseNodeID(web, "")
		hrs := map[NodeID]*helmv2.HelmRelease{
			dbID: withHR(hrConverged("db"), func(hr *helmv2.HelmRelease) { hrReady(hr, "False", helmv2.InstallFailedReason, "not yet") }),
			webID: withHR(hrConverged("web", "db"), func(hr *helmv2.HelmRelease) {
				hrReady(hr, "False", helmv2.DependencyNotReadyReason, "dependency 'kube-system/db' is not ready according to readyExpr eval")
				hr.Spec.DependsOn[0].ReadyExpr = web.Spec.DependsOn[0].ReadyExpr
			}),
		}
		w.now = w.now.Add(time.Second)
		s := w.tr.Step(w.now, Snapshot{Kustomizations: w.ks, HelmReleases: hrs, Sources: map[SourceRef]Source{w.src.Ref: w.src, src.Ref: src}})
		var webNudged bool
		for _, n := range s.Nudges {
			webNudged = webNudged || n.ID == webID
		}
		if webNudged == additive {
			t.Errorf("AdditiveCELDependencyCheck %t: web nudged %t while db fails but its readyExpr holds: %v", additive, webNudged, s.Lines)
		}
	}
}
