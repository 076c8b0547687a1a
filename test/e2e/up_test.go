//go:build e2e

package e2e

// `bootstrap up`, the cluster lock and the Ansible example against the
// shared sandbox, each from ensureFlux's state; the Ansible play syncs dev
// from a repository of its own.

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/agekey/agekeytest"
	"github.com/homelab-ops/bootstrap/internal/lock"
)

func leaseHolder(ctx context.Context, t *testing.T) string {
	t.Helper()
	l, err := suite.cs.CoordinationV1().Leases(fluxNS).Get(ctx, lock.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ptr.Deref(l.Spec.HolderIdentity, "")
}

func TestClusterLock(t *testing.T) {
	ctx := timeoutCtx(t, 5*time.Minute)
	ensureFlux(t)
	generation := func() int64 {
		var d appsv1.Deployment
		if err := suite.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: "kustomize-controller"}, &d); err != nil {
			t.Fatal(err)
		}
		return d.Generation
	}
	controllers := []string{"controllers", "--flux-version", "v2.9.5", "--timeout", "2m"}

	held, err := lock.Acquire(ctx, suite.cs, lock.Options{Namespace: fluxNS, Command: "e2e holder", Duration: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("HeldLockRefusesNamingTheHolder", func(t *testing.T) {
		before := generation()
		r := bootstrapJSON(t, controllers...)
		if r.code != 1 || !strings.Contains(r.report.Error, "e2e holder") || !strings.Contains(r.report.Error, "--break-lock") {
			t.Fatalf("want a refusal naming the holder:\n%s", r)
		}
		if r.report.Changed || generation() != before {
			t.Fatalf("a refused run changed the cluster:\n%s", r)
		}
		// A dry run takes no lock.
		if d := bootstrapJSON(t, append(controllers, "--dry-run")...); d.code != 0 {
			t.Fatalf("dry run under a held lock:\n%s", d)
		}
	})
	t.Run("BreakLockTakesOverAndReleases", func(t *testing.T) {
		r := bootstrapJSON(t, append(controllers, "--break-lock")...)
		if r.code != 0 || !strings.Contains(strings.Join(r.report.Warnings, "\n"), "broke the lock of e2e holder") {
			t.Fatalf("--break-lock:\n%s\nwarnings %q", r, r.report.Warnings)
		}
		if h := leaseHolder(ctx, t); h != "" {
			t.Fatalf("the lock is still held after the run: %s", h)
		}
	})
	_ = held.Release() // the broken holder's release must leave the lease alone
	t.Run("StaleLockTakenOver", func(t *testing.T) {
		l, err := suite.cs.CoordinationV1().Leases(fluxNS).Get(ctx, lock.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		crashed := `{"host":"ansible-1","pid":4242,"command":"bootstrap up","since":"2026-01-01T00:00:00Z"}`
		l.Spec = coordinationv1.LeaseSpec{HolderIdentity: &crashed, LeaseDurationSeconds: ptr.To[int32](30),
			RenewTime: &metav1.MicroTime{Time: time.Now().Add(-5 * time.Minute)}}
		if _, err := suite.cs.CoordinationV1().Leases(fluxNS).Update(ctx, l, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		r := bootstrapJSON(t, controllers...)
		if r.code != 0 || !strings.Contains(strings.Join(r.report.Warnings, "\n"), "stopped renewing") {
			t.Fatalf("stale lock:\n%s\nwarnings %q", r, r.report.Warnings)
		}
	})
}

// TestAnsibleUp runs examples/ansible/bootstrap.yml with ansible-playbook
// (installed by hack/sandbox/install-deps.sh): the first run changes the
// cluster, the second changes nothing, a wrong key fails the task with the
// gate's message, and no key material reaches Ansible's output.
func TestAnsibleUp(t *testing.T) {
	ctx := timeoutCtx(t, 15*time.Minute)
	ensureFlux(t)
	playbookBin, err := exec.LookPath("ansible-playbook")
	if err != nil {
		t.Fatal("ansible-playbook not found: hack/sandbox/install-deps.sh installs ansible-core; this scenario cannot be skipped")
	}
	key, recipient, err := agekeytest.NewIdentity()
	if err != nil {
		t.Fatal(err)
	}
	wrongKey, _, err := agekeytest.NewIdentity()
	if err != nil {
		t.Fatal(err)
	}
	enc, err := agekeytest.EncryptedSecret("homelab-secret", "up-s3cr3t", recipient)
	if err != nil {
		t.Fatal(err)
	}
	url := suite.git.URL + "/homelab-up.git"
	repoDir := copyDir(t, filepath.Join(suite.root, "testdata", "homelab"), map[string]string{
		"clusters/dev/source.yaml":      sourcePatch(url),
		"clusters/prod/source.yaml":     sourcePatch(url),
		"apps/secrets/secret.sops.yaml": enc,
	})
	gitRepo, _, err := suite.git.CreateRepo(ctx, "homelab-up", repoDir)
	if err != nil {
		t.Fatal(err)
	}
	defer gitRepo.Close()
	// ensureFlux left nothing of the fixture: the first run is a cold
	// bring-up of dev, with everything to do.

	reports := t.TempDir()
	if err := os.Chmod(reports, 0o750); err != nil { // as the play wants it: only the up task may change
		t.Fatal(err)
	}
	playbook := func(t *testing.T, ageKey string) (string, error) {
		t.Helper()
		vars, err := json.Marshal(map[string]any{
			"bootstrap_bin": bootstrapCLI(t), "bootstrap_repo": repoDir, "bootstrap_env": "dev",
			"bootstrap_kubeconfig": suite.sb.KubeconfigPath, "bootstrap_report_dir": reports,
			"bootstrap_extra_args": []string{"--timeout", "3m"}, "sops_age_key": ageKey,
			"ansible_python_interpreter": "/usr/bin/python3",
		})
		if err != nil {
			t.Fatal(err)
		}
		varsFile := filepath.Join(t.TempDir(), "vars.json")
		if err := os.WriteFile(varsFile, vars, 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(ctx, playbookBin, "-i", "localhost,", "-c", "local", "-e", "@"+varsFile,
			filepath.Join(suite.root, "examples", "ansible", "bootstrap.yml"))
		cmd.Env = append(os.Environ(), "ANSIBLE_NOCOLOR=1", "ANSIBLE_LOCALHOST_WARNING=False", "ANSIBLE_HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if strings.Contains(strings.ToUpper(string(out)), "AGE-SECRET-KEY-") {
			t.Fatalf("Ansible's output holds age key material:\n%s", out)
		}
		return string(out), err
	}
	// On a failure, the saved report says which gate stopped the run.
	saved := func() string {
		b, err := os.ReadFile(filepath.Join(reports, "up.json"))
		if err != nil {
			return "(no saved report: " + err.Error() + ")"
		}
		var r cliReport
		if err := json.Unmarshal(b, &r); err != nil {
			return err.Error()
		}
		var out []string
		for _, c := range r.Checks {
			if c.Verdict == "fail" || c.Verdict == "skip" {
				out = append(out, c.ID+": "+c.Verdict+": "+c.Message+" "+strings.Join(c.Evidence, " | "))
			}
		}
		return strings.Join(out, "\n")
	}
	recap := regexp.MustCompile(`localhost\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=\d+\s+failed=(\d+)`)
	counts := func(t *testing.T, out string) (changed, failed string) {
		t.Helper()
		m := recap.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no PLAY RECAP line:\n%s", out)
		}
		return m[2], m[3]
	}

	t.Run("FirstRunChanges", func(t *testing.T) {
		out, err := playbook(t, key)
		if c, f := counts(t, out); err != nil || c != "1" || f != "0" {
			t.Fatalf("first run: changed=%s failed=%s (%v)\n%s\nsaved report:\n%s", c, f, err, out, saved())
		}
		b, err := os.ReadFile(filepath.Join(reports, "up.json"))
		if err != nil {
			t.Fatalf("the report was not saved: %v", err)
		}
		var r cliReport
		if err := json.Unmarshal(b, &r); err != nil || r.Verdict == "" || !r.Changed {
			t.Fatalf("saved report: %v %+v", err, r)
		}
	})
	t.Run("SecondRunChangesNothing", func(t *testing.T) {
		out, err := playbook(t, key)
		if c, f := counts(t, out); err != nil || c != "0" || f != "0" {
			t.Fatalf("second run: changed=%s failed=%s (%v)\n%s\nsaved report:\n%s", c, f, err, out, saved())
		}
	})
	t.Run("WrongKeyFailsWithTheGateMessage", func(t *testing.T) {
		out, err := playbook(t, wrongKey)
		if _, f := counts(t, out); err == nil || f != "1" || !strings.Contains(out, "encrypted to someone else") {
			t.Fatalf("wrong key: want the play to fail with the gate's message (%v)\n%s", err, out)
		}
	})
}
