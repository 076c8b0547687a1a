//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestWaitOrderDeadlock: check's [wait-order] fail, and the real
// controllers agreeing. The cilium release is made to depend on
// cert-manager, which Kustomization platform applies — and platform
// depends on cilium, whose wait: true health-checks the cilium release.
// `check` fails it offline, naming the deadlock; brought up anyway,
// helm-controller keeps cilium DependencyNotReady, kustomize-controller
// fails cilium's health check at its timeout, and platform never applies.
func TestWaitOrderDeadlock(t *testing.T) {
	ctx := timeoutCtx(t, 10*time.Minute)
	ensureFlux(t)
	f := newHelmFixture(ctx, t, suite)
	files := map[string]string{}
	for rel, edit := range map[string][2]string{
		"infrastructure/cilium/cilium.yaml": {"    name: cilium-chart\n", "    name: cilium-chart\n  dependsOn:\n    - name: cert-manager\n      namespace: platform\n"},
		"clusters/base/tiers.yaml":          {"  timeout: 3m\n", "  timeout: 20s\n"},
	} {
		b, err := os.ReadFile(filepath.Join(f.dir, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		s := strings.Replace(string(b), edit[0], edit[1], 1)
		if s == string(b) {
			t.Fatalf("%s does not contain %q", rel, edit[0])
		}
		files[rel] = s
	}
	if _, err := f.repo.Commit(ctx, "", files, "cilium depends on a release its dependent applies"); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, f.dir, files)

	c := bootstrapJSON(t, "check", "--repo", f.dir, "--env", "dev")
	if g := c.report.check("check.graph"); c.code != 1 || !strings.HasPrefix(g, "fail") || !strings.Contains(g, "[wait-order]") || !strings.Contains(g, "a deadlock") {
		t.Fatalf("check: exit %d, check.graph %q; want a [wait-order] deadlock failure", c.code, g)
	}

	r := bootstrapJSON(t, "sync", "--repo", f.dir, "--env", "dev", "--check=false", "--timeout", "3m", "--fail-after", "60s")
	if r.code != 1 {
		t.Fatalf("sync of the deadlocked graph: exit %d, want 1\n%s", r.code, r)
	}
	var ks kustomizev1.Kustomization
	waitFor(ctx, t, suite.client, &kustomizev1.KustomizationList{}, fluxNS, "cilium", func(k *kustomizev1.Kustomization) (bool, string) {
		ks = *k
		c := apimeta.FindStatusCondition(k.Status.Conditions, meta.ReadyCondition)
		if c == nil {
			return false, "no Ready condition"
		}
		return c.Reason == meta.HealthCheckFailedReason, c.Reason + ": " + c.Message
	})
	var hr helmv2.HelmRelease
	if err := suite.client.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "cilium"}, &hr); err != nil {
		t.Fatal(err)
	}
	hc := apimeta.FindStatusCondition(hr.Status.Conditions, meta.ReadyCondition)
	if hc == nil || hc.Reason != "DependencyNotReady" || !strings.Contains(hc.Message, "cert-manager") {
		t.Errorf("HelmRelease kube-system/cilium: %+v, want DependencyNotReady on platform/cert-manager", hc)
	}
	var pk kustomizev1.Kustomization
	if err := suite.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: "platform"}, &pk); err != nil {
		t.Fatal(err)
	}
	if pk.Status.LastAppliedRevision != "" {
		t.Errorf("platform applied %s; the deadlock should keep it from applying", pk.Status.LastAppliedRevision)
	}
	t.Logf("cilium: %s; HelmRelease cilium: %s; platform applied nothing (%s)",
		apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition).Message, hc.Message, r.report.check("converge.node/flux-system/cilium"))
}
