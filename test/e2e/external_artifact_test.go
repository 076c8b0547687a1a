//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/homelab-ops/bootstrap/internal/rootsync"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// TestExternalArtifactGate: the real kustomize-controller v1.9.5, as the
// tool installs it (ExternalArtifact gate at its opt-in default), refuses
// a Kustomization whose source is an ExternalArtifact ("… feature gate is
// disabled", getSource), and sync.external-artifact gives the same verdict
// for an environment holding one, read from the same live Deployment.
func TestExternalArtifactGate(t *testing.T) {
	ctx := timeoutCtx(t, 3*time.Minute)
	ensureFlux(t)
	k := kustomization("ea-probe", "./")
	k.Spec.SourceRef = kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.ExternalArtifactKind, Name: "ea-probe"}
	if err := suite.client.Create(ctx, k); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = suite.client.Delete(timeoutCtx(t, 30*time.Second), k) })
	waitFor(ctx, t, suite.client, &kustomizev1.KustomizationList{}, fluxNS, k.Name, func(k *kustomizev1.Kustomization) (bool, string) {
		st, reason, msg, _ := readyStatus(k.Generation, k.Status.Conditions)
		return st == metav1.ConditionFalse && strings.Contains(msg, "ExternalArtifact feature gate is disabled"), string(st) + " " + reason + " " + msg
	})

	apps, err := os.ReadFile(filepath.Join(suite.root, "testdata", "homelab", "clusters", "base", "apps.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const from = "  sourceRef:\n    kind: GitRepository\n    name: flux-system\n"
	repo := copyDir(t, filepath.Join(suite.root, "testdata", "homelab"), map[string]string{
		"clusters/base/apps.yaml": strings.Replace(string(apps), from, "  sourceRef:\n    kind: ExternalArtifact\n    name: apps\n", 1)})
	r, err := rootsync.Build(rootsync.Options{Repo: repo, Path: "clusters/dev", Namespace: fluxNS, RootName: fluxNS})
	if err != nil {
		t.Fatal(err)
	}
	if c := rootsync.ExternalArtifactGate(ctx, suite.client, r); c.Verdict != verify.Fail || !strings.Contains(c.Message, "runs with ExternalArtifact=false (its default)") {
		t.Errorf("%s: %s %s, want the controller's refusal", c.ID, c.Verdict, c.Message)
	}
}
