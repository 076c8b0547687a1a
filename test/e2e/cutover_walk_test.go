//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/agekey"
	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/internal/cutover"
	"github.com/homelab-ops/bootstrap/internal/kube"
	"github.com/homelab-ops/bootstrap/internal/sandbox/gitserver"
)

// TestCutoverWalksTheChain: a cutover to a final source one commit ahead
// of the temporary one is the converge walk. Every Kustomization of prod
// must apply the new commit, dependency before dependent; kustomize-
// controller alone re-checks a blocked dependent only every
// --requeue-dependency (30 s), so the chain's levels would take minutes.
// With the walk's nudges the cutover passes within a --timeout of 60 s,
// which the old wait (one Kustomization after another, no nudge) could not:
// it failed at its timeout with most of the chain stale.
func TestCutoverWalksTheChain(t *testing.T) {
	ctx := timeoutCtx(t, 10*time.Minute)
	ensureFlux(t)
	suite.waitRunning(ctx, t, "kustomize-controller")
	suite.waitRunning(ctx, t, "source-controller")

	key, enc := sopsFixtureSecret(t, "walk-s3cr3t")
	finalURL := suite.git.URL + "/walkchain.git"
	repoDir := copyDir(t, filepath.Join(suite.root, "testdata", "homelab"), map[string]string{
		"clusters/prod/source.yaml":     sourcePatch(finalURL),
		"apps/secrets/secret.sops.yaml": enc,
	})
	gitRepo, _, err := suite.git.CreateRepo(ctx, "walkchain", repoDir)
	if err != nil {
		t.Fatal(err)
	}
	defer gitRepo.Close()
	ids, err := agekey.Parse([]byte(key), "test")
	if err != nil {
		t.Fatal(err)
	}
	if err := suite.client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: fluxNS, Name: agekey.DefaultSecretName},
		Data: map[string][]byte{agekey.DataKey: ids.SecretData()}}); err != nil {
		t.Fatal(err)
	}

	// The temporary source: a mirror of the final repository.
	temp, err := gitserver.Start(filepath.Join(t.TempDir(), "git"), "")
	if err != nil {
		t.Fatal(err)
	}
	defer temp.Close()
	tempBare := filepath.Join(temp.Root, "walkchain.git")
	git(t, "", "clone", "--quiet", "--bare", filepath.Join(suite.git.Root, "walkchain.git"), tempBare)
	tempURL := temp.URL + "/walkchain.git"
	if r := bootstrapJSON(t, "sync", "--repo", repoDir, "--env", "prod", "--timeout", "3m", "--source-url", tempURL); r.code != 0 {
		t.Fatalf("sync prod from the temporary source:\n%s\n%s", r, r.stderr)
	}

	// One commit on the final server only: the cutover moves every
	// Kustomization to a revision none has applied.
	work := filepath.Join(t.TempDir(), "work")
	git(t, "", "clone", "--quiet", finalURL, work)
	if err := os.WriteFile(filepath.Join(work, "apps", "web", "web.yaml"), []byte(strings.Replace(readFixture(t, "apps/web/web.yaml"), "\ndata:\n", "\ndata:\n  wave: \"final\"\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, work, "commit", "--quiet", "-am", "web: only on the final server")
	head := git(t, work, "rev-parse", "HEAD")
	git(t, work, "push", "--quiet", "origin", "HEAD:main")

	start := time.Now()
	r := bootstrapJSON(t, "cutover", "--timeout", "60s")
	c := r.report.check(cutover.GateConsumersReady.ID)
	if r.code != 0 || !strings.HasPrefix(c, "pass") || !strings.Contains(c, "main@sha1:"+head) {
		t.Fatalf("cutover to a commit the cluster has not applied:\n%s\n%s", r, r.stderr)
	}
	var ev []string
	for _, ch := range r.report.Checks {
		if ch.ID == cutover.GateConsumersReady.ID {
			ev = ch.Evidence
		}
	}
	if ev := strings.Join(ev, "\n"); !regexp.MustCompile(`converge\.nudges=[1-9]`).MatchString(ev) {
		t.Errorf("the cutover's walk sent no nudge: it waited on the controllers' own requeues\n%s", ev)
	}
	// Handed back, the GitRepository is kustomize-controller's alone: no
	// field of this tool's apply or reconcile request is left for git's
	// next revision to fight (apply.HandOver).
	var gr sourcev1.GitRepository
	if err := suite.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: fluxNS}, &gr); err != nil {
		t.Fatal(err)
	}
	if left := apply.OwnedBy(&gr, kube.FieldManager); len(left) > 0 {
		t.Errorf("after the cutover GitRepository %s/%s still has fields owned by %v", fluxNS, fluxNS, left)
	}
	t.Logf("cutover to a new commit across the chain: %s; %s", time.Since(start).Round(time.Millisecond), c)
}
