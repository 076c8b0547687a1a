package status

import (
	"context"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/internal/converge"
	"github.com/homelab-ops/bootstrap/internal/kube"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/internal/rootsync"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

const rev = "main@sha1:1111111111111111111111111111111111111111"

func gitRepo(t *testing.T, temporary bool, ready bool) *sourcev1.GitRepository {
	t.Helper()
	g := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "flux-system", Generation: 1}}
	g.Spec.URL = "https://git.example.invalid/homelab/gitops.git"
	if temporary {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(g)
		if err != nil {
			t.Fatal(err)
		}
		obj := &unstructured.Unstructured{Object: u}
		if err := rootsync.Override(obj, &rootsync.Temporary{URL: "https://mirror.lan/gitops.git", Since: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}); err != nil {
			t.Fatal(err)
		}
		g = &sourcev1.GitRepository{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, g); err != nil {
			t.Fatal(err)
		}
	}
	if ready {
		g.Status.Artifact, g.Status.ObservedGeneration = &meta.Artifact{Revision: rev}, 1
		g.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: "True", Reason: meta.SucceededReason, ObservedGeneration: 1}}
	}
	return g
}

// TestSourcePhase: the root's source read once: declared and Ready passes;
// left on the temporary source fails naming it and the fix; not Ready
// fails; a missing root fails.
func TestSourcePhase(t *testing.T) {
	s, err := kube.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	root := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "flux-system"}}
	root.Spec.SourceRef = kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "flux-system"}
	tests := []struct {
		name           string
		objs           []client.Object
		temp, ready    verify.Verdict
		tempMsg, rdMsg string
	}{
		{"declared and Ready", []client.Object{root, gitRepo(t, false, true)}, verify.Pass, verify.Pass, "fetches its declared url https://git.example.invalid/homelab/gitops.git", "Ready, artifact " + rev},
		{"left temporary", []client.Object{root, gitRepo(t, true, true)}, verify.Fail, verify.Pass, "GitRepository flux-system/flux-system is still on the temporary source https://mirror.lan/gitops.git (since 2026-01-02T03:04:05Z; git declares https://git.example.invalid/homelab/gitops.git)", "Ready"},
		{"not Ready", []client.Object{root, gitRepo(t, false, false)}, verify.Pass, verify.Fail, "declared url", "not Ready with an artifact: no Ready condition yet"},
		{"no root", nil, verify.Fail, verify.Fail, "the root Kustomization flux-system/flux-system does not exist", "does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(s).WithObjects(tt.objs...).Build()
			p := NewSourcePhase(SourceOptions{Root: converge.NodeID{Namespace: "flux-system", Name: "flux-system"}}, func() (*apply.Cluster, error) { return &apply.Cluster{Client: c}, nil })
			r := verify.NewReport("status")
			if err := pipeline.Execute(context.Background(), &pipeline.Run{Report: r, KeepGoing: true}, p); err != nil {
				t.Fatal(err)
			}
			got := map[string]verify.Check{}
			for _, ch := range r.Checks {
				got[ch.ID] = ch
			}
			tc, sc := got[GateTemporary.ID], got[GateSourceReady.ID]
			if tc.Verdict != tt.temp || !strings.Contains(tc.Message, tt.tempMsg) {
				t.Errorf("temporary-source: %s %q, want %s containing %q", tc.Verdict, tc.Message, tt.temp, tt.tempMsg)
			}
			if sc.Verdict != tt.ready || !strings.Contains(sc.Message, tt.rdMsg) {
				t.Errorf("source-ready: %s %q, want %s containing %q", sc.Verdict, sc.Message, tt.ready, tt.rdMsg)
			}
		})
	}
}
