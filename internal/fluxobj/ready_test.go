package fluxobj

import (
	"strings"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func readyKust(rev string) *kustomizev1.Kustomization {
	k := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "apps", Generation: 3}}
	k.Status.ObservedGeneration = 3
	k.Status.LastAppliedRevision = rev
	k.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: meta.ReconciliationSucceededReason, ObservedGeneration: 3}}
	return k
}

// TestReady: every generic clause is load-bearing, and an object with no
// conditions is not Ready (kstatus would call it Current). The clauses are
// fluxcd/pkg/runtime/conditions' (Get, IsReconciling, IsStalled), as
// kustomize-controller's checkDependencies reads a dependency
// (dep.Generation == dep.Status.ObservedGeneration and Ready=True).
func TestReady(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*kustomizev1.Kustomization)
		ok   bool
		says string
	}{
		{"ready", func(*kustomizev1.Kustomization) {}, true, "Ready=True"},
		{"no conditions", func(k *kustomizev1.Kustomization) { k.Status.Conditions = nil }, false, "no Ready condition yet"},
		{"status.observedGeneration behind", func(k *kustomizev1.Kustomization) { k.Status.ObservedGeneration = 2 }, false, "not observed its generation"},
		{"Ready observed an old generation", func(k *kustomizev1.Kustomization) { k.Status.Conditions[0].ObservedGeneration = 2 }, false, "observed 2"},
		{"Ready=False", func(k *kustomizev1.Kustomization) { k.Status.Conditions[0].Status = metav1.ConditionFalse }, false, "Ready=False"},
		{"reconciling", func(k *kustomizev1.Kustomization) {
			k.Status.Conditions = append(k.Status.Conditions, metav1.Condition{Type: meta.ReconcilingCondition, Status: metav1.ConditionTrue})
		}, false, "not not reconciling"},
		{"stalled", func(k *kustomizev1.Kustomization) {
			k.Status.Conditions = append(k.Status.Conditions, metav1.Condition{Type: meta.StalledCondition, Status: metav1.ConditionTrue})
		}, false, "not not stalled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := readyKust("main@sha1:1")
			tc.edit(k)
			ok, desc := Ready(k)
			if ok != tc.ok || !strings.Contains(desc, tc.says) {
				t.Errorf("Ready = %t %q, want %t saying %q", ok, desc, tc.ok, tc.says)
			}
		})
	}
}

// TestAppliedRevision: this tool's revision clause, on top of Ready: the
// Kustomization applied (status.lastAppliedRevision, as kustomize-controller
// records it) its source's current artifact revision; and spec.suspend read
// for every kind that has it.
func TestAppliedRevision(t *testing.T) {
	for _, tc := range []struct {
		name, applied, rev string
		ok                 bool
	}{
		{"at the revision", "main@sha1:1", "main@sha1:1", true},
		{"at an old revision", "main@sha1:0", "main@sha1:1", false},
		{"never applied", "", "main@sha1:1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := AppliedRevision(readyKust(tc.applied), tc.rev); got != tc.ok {
				t.Errorf("got %t, want %t", got, tc.ok)
			}
		})
	}
	k := readyKust("")
	if Suspended(k) {
		t.Error("not suspended")
	}
	k.Spec.Suspend = true
	if !Suspended(k) {
		t.Error("suspended")
	}
}

// TestSourceKinds: every source kind's object, list, items, observed
// generation, suspend and artifact accessors.
func TestSourceKinds(t *testing.T) {
	for _, kind := range []string{GitRepositoryKind, OCIRepositoryKind, BucketKind, HelmRepositoryKind, HelmChartKind, ExternalArtifactKind} {
		sk, ok := Source(kind)
		if !ok || sk.Kind != kind {
			t.Fatalf("%s: not a source kind", kind)
		}
		o := sk.New()
		if _, ok := o.(sourcev1.Source); !ok {
			t.Errorf("%s: %T is not a sourcev1.Source", kind, o)
		}
		if ArtifactRevision(o) != "" || Suspended(o) {
			t.Errorf("%s: empty object has an artifact or is suspended", kind)
		}
		_, hasGen := ObservedGeneration(o)
		if hasGen != (kind != ExternalArtifactKind) {
			t.Errorf("%s: observed generation recorded %t", kind, hasGen)
		}
		if items := sk.Items(sk.NewList()); len(items) != 0 {
			t.Errorf("%s: empty list has %d items", kind, len(items))
		}
	}
	g := &sourcev1.GitRepositoryList{Items: []sourcev1.GitRepository{{}, {}}}
	g.Items[1].Status.Artifact = &meta.Artifact{Revision: "main@sha1:1"}
	sk, _ := Source(GitRepositoryKind)
	if items := sk.Items(g); len(items) != 2 || ArtifactRevision(items[1]) != "main@sha1:1" {
		t.Errorf("items %v", items)
	}
	if _, ok := Source(KustomizationKind); ok {
		t.Error("a Kustomization is not a source")
	}
}
