package converge

import (
	"strings"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/homelab-ops/bootstrap/internal/fluxobj"
)

const (
	rev1 = "main@sha1:1111111111111111111111111111111111111111"
	rev2 = "main@sha1:2222222222222222222222222222222222222222"
)

func readySource(rev string) Source {
	return Source{Ref: SourceRef{Kind: "GitRepository", Namespace: "flux-system", Name: "flux-system"}, Found: true, Ready: true, Revision: rev, Desc: "Ready at " + rev}
}

// ks is a declared Kustomization in flux-system reading the flux-system
// GitRepository.
func ks(name string, deps ...string) *kustomizev1.Kustomization {
	k := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "flux-system"}}
	k.Spec.SourceRef = kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "flux-system"}
	for _, d := range deps {
		k.Spec.DependsOn = append(k.Spec.DependsOn, kustomizev1.DependencyReference{Name: d})
	}
	return k
}

func cond(t, status, reason, msg string, gen int64) metav1.Condition {
	return metav1.Condition{Type: t, Status: metav1.ConditionStatus(status), Reason: reason, Message: msg, ObservedGeneration: gen}
}

// converged is a live Kustomization converged at rev, generation 2.
func converged(name, rev string, deps ...string) *kustomizev1.Kustomization {
	k := ks(name, deps...)
	k.Generation = 2
	k.Status.ObservedGeneration = 2
	k.Status.LastAppliedRevision = rev
	k.Status.LastAttemptedRevision = rev
	k.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", meta.ReconciliationSucceededReason, "Applied revision: "+rev, 2)}
	return k
}

func with(k *kustomizev1.Kustomization, f func(*kustomizev1.Kustomization)) *kustomizev1.Kustomization {
	f(k)
	return k
}

func ready(k *kustomizev1.Kustomization, status, reason, msg string) {
	k.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, status, reason, msg, k.Generation)}
}

type classifyCase struct {
	name string
	k    *kustomizev1.Kustomization
	src  Source
	want State
	why  string // a substring of Why
	cur  bool
}

// classifyCases covers every state, and for the converged predicate one
// case per clause that breaks only that clause.
func classifyCases() []classifyCase {
	return []classifyCase{
		{name: "converged", k: converged("a", rev1), src: readySource(rev1), want: Converged},
		{name: "not created", k: nil, src: readySource(rev1), want: Pending},
		{name: "suspended", k: with(converged("a", rev1), func(k *kustomizev1.Kustomization) { k.Spec.Suspend = true }),
			src: readySource(rev1), want: Terminal, why: "suspended"},
		{name: "new generation not observed", k: with(converged("a", rev1), func(k *kustomizev1.Kustomization) {
			k.Generation = 3
			k.Status.Conditions[0].ObservedGeneration = 3
		}), src: readySource(rev1), want: Progressing, why: "finishing: Ready at generation 3, status.observedGeneration still 2"},
		{name: "status.observedGeneration -1 while finishing", k: with(converged("a", rev1), func(k *kustomizev1.Kustomization) {
			k.Status.ObservedGeneration = -1
		}), src: readySource(rev1), want: Progressing, why: "finishing"},
		{name: "spec changed, Ready and status at the old generation", k: with(converged("a", rev1), func(k *kustomizev1.Kustomization) {
			k.Generation = 3
		}), src: readySource(rev1), want: Stale, why: "not observed its generation"},
		{name: "Ready observed an old generation", k: with(converged("a", rev1), func(k *kustomizev1.Kustomization) {
			k.Status.Conditions[0].ObservedGeneration = 1
		}), src: readySource(rev1), want: Stale, why: "Ready=True at its generation"},
		{name: "Ready=True but reconciling", k: with(converged("a", rev1), func(k *kustomizev1.Kustomization) {
			k.Status.Conditions = append(k.Status.Conditions, cond(meta.ReconcilingCondition, "True", meta.ProgressingReason, "Reconciliation in progress", 2))
		}), src: readySource(rev1), want: Progressing},
		{name: "Ready=True but stalled", k: with(converged("a", rev1), func(k *kustomizev1.Kustomization) {
			k.Status.Conditions = append(k.Status.Conditions, cond(meta.StalledCondition, "True", meta.InvalidPathReason, "path not found", 2))
		}), src: readySource(rev1), want: Terminal, why: "stalled: InvalidPath: path not found"},
		{name: "source not ready", k: converged("a", rev1), src: Source{Ref: readySource("").Ref, Found: true, Ready: false, Revision: rev1, Desc: "Ready=False GitOperationFailed"},
			want: Stale, why: "its source GitRepository/flux-system/flux-system is not"},
		{name: "source missing", k: converged("a", rev1), src: Source{Ref: readySource("").Ref, Desc: "not found"}, want: Stale},
		{name: "applied an old revision", k: converged("a", rev1), src: readySource(rev2), want: Stale, why: "its source is at " + rev2},
		{name: "no Ready condition", k: with(ks("a"), func(k *kustomizev1.Kustomization) { k.Generation = 1 }), src: readySource(rev1), want: Progressing},
		{name: "Ready=Unknown progressing", k: with(converged("a", rev1), func(k *kustomizev1.Kustomization) {
			ready(k, "Unknown", meta.ProgressingReason, "Reconciliation in progress")
		}), src: readySource(rev2), want: Progressing},
		{name: "blocked", k: with(converged("b", rev1, "a"), func(k *kustomizev1.Kustomization) {
			ready(k, "False", meta.DependencyNotReadyReason, "dependency 'flux-system/a' is not ready")
		}), src: readySource(rev2), want: Blocked, why: "flux-system/a"},
		{name: "build failed at the current revision", k: with(converged("a", rev1), func(k *kustomizev1.Kustomization) {
			ready(k, "False", meta.BuildFailedReason, "variable not set (strict mode): \"missing\"")
			k.Status.LastAttemptedRevision = rev2
			k.Status.Conditions = append(k.Status.Conditions, cond(meta.ReconcilingCondition, "True", meta.ProgressingWithRetryReason, "retrying", 2))
		}), src: readySource(rev2), want: Failing, why: "BuildFailed: variable not set (strict mode)", cur: true},
		{name: "failure at an old revision does not count", k: with(converged("a", rev1), func(k *kustomizev1.Kustomization) {
			ready(k, "False", meta.HealthCheckFailedReason, "timeout waiting for Deployment")
		}), src: readySource(rev2), want: Failing, cur: false},
		{name: "failure at an old generation does not count", k: with(converged("a", rev2), func(k *kustomizev1.Kustomization) {
			ready(k, "False", meta.ReconciliationFailedReason, "apply failed")
			k.Status.Conditions[0].ObservedGeneration = 1
		}), src: readySource(rev2), want: Failing, cur: false},
		{name: "prune failed", k: with(converged("a", rev2), func(k *kustomizev1.Kustomization) {
			ready(k, "False", meta.PruneFailedReason, "prune failed")
		}), src: readySource(rev2), want: Failing, cur: true},
		{name: "artifact failed", k: with(converged("a", rev2), func(k *kustomizev1.Kustomization) {
			ready(k, "False", meta.ArtifactFailedReason, "Source artifact not found")
		}), src: readySource(rev2), want: Failing, cur: true},
		{name: "unknown Ready=False reason fails closed", k: with(converged("a", rev2), func(k *kustomizev1.Kustomization) {
			ready(k, "False", "SomethingNew", "what")
		}), src: readySource(rev2), want: Failing, why: "Ready=False SomethingNew", cur: true},
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range classifyCases() {
		t.Run(tc.name, func(t *testing.T) {
			st := Classify(tc.k, tc.src)
			if st.State != tc.want || !strings.Contains(st.Why, tc.why) || st.Current != tc.cur {
				t.Fatalf("got %s (current %t): %q; want %s (current %t) with %q", st.State, st.Current, st.Why, tc.want, tc.cur, tc.why)
			}
			if got := IsConverged(tc.k, tc.src); got != (tc.want == Converged) {
				t.Fatalf("IsConverged = %t, want %t", got, tc.want == Converged)
			}
		})
	}
}

// object is k as the model's Object, nil when k is (not created).
func object(k *kustomizev1.Kustomization) fluxobj.Object {
	if k == nil {
		return nil
	}
	return k
}

// TestEveryClauseIsLoadBearing is the negative control of the predicate:
// for each clause, the predicate without it must get at least one case
// wrong (e.g. a variant that ignores revisions calls "applied an old
// revision" converged).
func TestEveryClauseIsLoadBearing(t *testing.T) {
	for i, c := range convergedClauses {
		variant := append(append([]fluxobj.Rule{}, convergedClauses[:i]...), convergedClauses[i+1:]...)
		var wrong []string
		for _, tc := range classifyCases() {
			ok, _ := fluxobj.Holds(variant, object(tc.k), tc.src)
			if ok != (tc.want == Converged) {
				wrong = append(wrong, tc.name)
			}
		}
		if len(wrong) == 0 {
			t.Errorf("clause %q is not load-bearing: the predicate without it passes every case", c.ID)
		} else {
			t.Logf("without %q the predicate gets wrong: %s", c.ID, strings.Join(wrong, "; "))
		}
	}
}

// TestDescribe: a wait's description says the state, the Ready reason and
// both revisions, so a sync or cutover that times out names why.
func TestDescribe(t *testing.T) {
	src := Source{Found: true, Ready: true, Revision: "main@sha1:new"}
	k := with(converged("apps", "main@sha1:old"), func(k *kustomizev1.Kustomization) {
		ready(k, "False", meta.BuildFailedReason, "kustomize build failed")
	})
	d := Describe(k, src)
	for _, want := range []string{string(Failing), meta.BuildFailedReason, "kustomize build failed", "lastAppliedRevision=main@sha1:old", "source at main@sha1:new"} {
		if !strings.Contains(d, want) {
			t.Errorf("Describe = %q, want %q in it", d, want)
		}
	}
	if d := Describe(converged("apps", "main@sha1:new"), src); !strings.HasPrefix(d, string(Converged)) {
		t.Errorf("Describe of a converged node = %q", d)
	}
}
