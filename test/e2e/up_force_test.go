//go:build e2e

package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/homelab-ops/bootstrap/internal/agekey"
	"github.com/homelab-ops/bootstrap/internal/agekey/agekeytest"
	"github.com/homelab-ops/bootstrap/internal/rootsync"
)

// TestUpForce: up's --force reaches the age-key phase, as age-key's own
// does. The fixture's dev environment decrypts with sops-age but holds no
// SOPS file yet: up stops at age-key.scope (exit 3, nothing installed, the
// root not applied); up --force installs the key with the gate a warning,
// and syncs.
func TestUpForce(t *testing.T) {
	ctx := timeoutCtx(t, 10*time.Minute)
	ensureFlux(t)
	suite.waitRunning(ctx, t, "kustomize-controller")
	suite.waitRunning(ctx, t, "source-controller")
	key, _, err := agekeytest.NewIdentity()
	if err != nil {
		t.Fatal(err)
	}
	url := suite.git.URL + "/homelab-up-force.git"
	repoDir := copyDir(t, filepath.Join(suite.root, "testdata", "homelab"), map[string]string{
		"clusters/dev/source.yaml":  sourcePatch(url),
		"clusters/prod/source.yaml": sourcePatch(url),
	})
	gitRepo, _, err := suite.git.CreateRepo(ctx, "homelab-up-force", repoDir)
	if err != nil {
		t.Fatal(err)
	}
	defer gitRepo.Close()
	// What earlier tests left (a source on a temporary URL, their age-key
	// Secret) would decide the run: ensureFlux removed it.

	up := func(t *testing.T, args ...string) syncRun {
		t.Helper()
		full := append([]string{"up", "--repo", repoDir, "--env", "dev", "--age-key-file", "-", "--converge=false", "--timeout", "3m",
			"-o", "json", "--kubeconfig", suite.sb.KubeconfigPath}, args...)
		cmd := exec.Command(bootstrapCLI(t), full...)
		cmd.Stdin = strings.NewReader(key)
		var r syncRun
		r.code, r.stdout, r.stderr, r.report = runJSON(t, cmd)
		return r
	}
	t.Run("WithoutForceStopsAtAgeKey", func(t *testing.T) {
		r := up(t)
		if r.code != 3 || !strings.HasPrefix(r.report.check(agekey.GateScope.ID), "skip") ||
			!strings.HasPrefix(r.report.check(agekey.GateSecretApplied.ID), "skip") ||
			!strings.HasPrefix(r.report.check(rootsync.GateApplied.ID), "skip") {
			t.Fatalf("want up to stop at age-key.scope, exit 3:\n%s", r)
		}
		if _, found := sopsAgeSecret(t); found {
			t.Fatal("the key was installed although age-key.scope skipped")
		}
		if _, found := liveGitRepository(ctx, t); found {
			t.Fatal("the root was applied although up stopped at age-key")
		}
	})
	t.Run("ForceInstallsTheKeyAndSyncs", func(t *testing.T) {
		r := up(t, "--force")
		if r.code != 0 || !strings.HasPrefix(r.report.check(agekey.GateScope.ID), "warn") ||
			!strings.Contains(r.report.check(agekey.GateScope.ID), "--force") ||
			!strings.Contains(r.report.check(agekey.GateSecretApplied.ID), "created") ||
			!strings.HasPrefix(r.report.check(rootsync.GateApplied.ID), "pass") {
			t.Fatalf("want up --force to install the key (age-key.scope a warning) and sync:\n%s\n%s", r, r.stderr)
		}
		if _, found := sopsAgeSecret(t); !found {
			t.Fatal("up --force passed but installed no key")
		}
	})
}
