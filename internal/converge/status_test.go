package converge

import (
	"context"
	"strings"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/internal/kube"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/internal/session"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// TestStatusPhase: the live graph read once: every node classified as the
// walk classifies it, the failing node fails, the node blocked behind it
// names it as the root cause, a suspended node fails, and nothing is
// written (no nudge, not even for the blocked node whose dependency
// converged).
func TestStatusPhase(t *testing.T) {
	s, err := kube.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	src := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "flux-system", Generation: 1}}
	src.Status.Artifact, src.Status.ObservedGeneration = &meta.Artifact{Revision: rev1}, 1
	src.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", meta.SucceededReason, "stored artifact", 1)}
	rootK := converged("flux-system", rev1)
	apps := with(failing("apps", rev1, ""), func(k *kustomizev1.Kustomization) {
		k.Spec.DependsOn = []kustomizev1.DependencyReference{{Name: "flux-system"}}
	})
	web := blocked("web", "", "apps")
	infra := converged("infra", rev1, "flux-system")
	waiting := blocked("waiting", "", "infra")
	paused := with(converged("paused", rev1, "flux-system"), func(k *kustomizev1.Kustomization) { k.Spec.Suspend = true })
	writes := 0
	count := func() { writes++ }
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(src, rootK, apps, web, infra, waiting, paused).
		WithStatusSubresource(&kustomizev1.Kustomization{}, &sourcev1.GitRepository{}).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
				count()
				return nil
			},
			Update: func(context.Context, client.WithWatch, client.Object, ...client.UpdateOption) error {
				count()
				return nil
			},
			Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
				count()
				return nil
			},
			Delete: func(context.Context, client.WithWatch, client.Object, ...client.DeleteOption) error {
				count()
				return nil
			},
		}).Build()
	cl := &apply.Cluster{Client: c, Clientset: k8sfake.NewClientset()}
	r := verify.NewReport("status")
	o := DefaultOptions()
	err = pipeline.Execute(context.Background(), &pipeline.Run{Report: r, KeepGoing: true}, NewStatusPhase(func() (*apply.Cluster, error) { return cl, nil }, o))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		v   verify.Verdict
		msg string
	}{
		"converge.graph":                        {verify.Pass, "6 Kustomization(s)"},
		"converge.node/flux-system/flux-system": {verify.Pass, "converged: Ready at " + rev1},
		"converge.node/flux-system/infra":       {verify.Pass, "converged"},
		"converge.node/flux-system/apps":        {verify.Fail, "failing: BuildFailed: variable not set (strict mode)"},
		"converge.node/flux-system/web":         {verify.Warn, "blocked: waits on flux-system/apps, the root cause (failing"},
		"converge.node/flux-system/waiting":     {verify.Warn, "blocked: dependency 'infra' is not ready (read once, not waited for)"},
		"converge.node/flux-system/paused":      {verify.Fail, "suspended: resume it"},
	}
	got := map[string]verify.Check{}
	for _, ch := range r.Checks {
		got[ch.ID] = ch
	}
	for id, w := range want {
		ch, ok := got[id]
		if !ok || ch.Verdict != w.v || !strings.Contains(ch.Message, w.msg) {
			t.Errorf("%s: %s %q, want %s containing %q", id, ch.Verdict, ch.Message, w.v, w.msg)
		}
	}
	if len(r.Checks) != len(want) {
		t.Errorf("%d checks, want %d: %+v", len(r.Checks), len(want), r.Checks)
	}
	if writes != 0 {
		t.Errorf("%d write(s) to the cluster: status must not write (no nudge)", writes)
	}
	if session.ReportCode(r) != session.ExitFailed || r.Facts["converge.converged"] != "2" {
		t.Errorf("exit %d, converged %s", session.ReportCode(r), r.Facts["converge.converged"])
	}
}
