//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/agekey"
	"github.com/homelab-ops/bootstrap/internal/agekey/agekeytest"
)

type ageKeyRun struct {
	code           int
	stdout, stderr string
	report         ageKeyReport
}

// ageKeyReport is the part of the JSON report these tests read.
type ageKeyReport = cliReport

// ageKeyCLI runs `bootstrap age-key …` with the key on stdin, and scans
// every output channel (stdout, stderr, --report-json, --junit, and the
// run's TMPDIR) for key material.
func ageKeyCLI(t *testing.T, stdin string, args ...string) ageKeyRun {
	t.Helper()
	out, tmp := t.TempDir(), t.TempDir()
	full := append([]string{"age-key"}, args...)
	full = append(full, "-o", "json", "--kubeconfig", suite.sb.KubeconfigPath,
		"--report-json", filepath.Join(out, "report.json"), "--junit", filepath.Join(out, "junit.xml"))
	cmd := exec.Command(bootstrapCLI(t), full...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	cmd.Stdin = strings.NewReader(stdin)
	var r ageKeyRun
	r.code, r.stdout, r.stderr, r.report = runJSON(t, cmd)
	noKey := func(what, s string) {
		if strings.Contains(strings.ToUpper(s), "AGE-SECRET-KEY-") {
			t.Errorf("bootstrap %s: %s holds age key material", strings.Join(args, " "), what)
		}
	}
	noKey("stdout", r.stdout)
	noKey("stderr", r.stderr)
	for _, dir := range []string{out, tmp} {
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				b, _ := os.ReadFile(p)
				noKey(p, string(b))
			}
			return nil
		})
	}
	return r
}

func (r ageKeyRun) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "exit %d, changed %t, error %q\n", r.code, r.report.Changed, r.report.Error)
	for _, c := range r.report.Checks {
		fmt.Fprintf(&b, "  %s %s: %s\n", c.Verdict, c.ID, c.Message)
	}
	return b.String()
}

func sopsAgeSecret(t *testing.T) (*corev1.Secret, bool) {
	t.Helper()
	var s corev1.Secret
	err := suite.client.Get(timeoutCtx(t, 30*time.Second), client.ObjectKey{Namespace: fluxNS, Name: agekey.DefaultSecretName}, &s)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return &s, true
}

// TestAgeKey: a repository with a SOPS-encrypted Secret (encrypted here
// with a generated key); the wrong key is refused before anything is
// installed; the right key is installed, idempotently; the real
// kustomize-controller decrypts and applies the Secret with it; verify
// passes; a different key is not swapped in without --rotate.
func TestAgeKey(t *testing.T) {
	ctx := timeoutCtx(t, 5*time.Minute)
	ensureFlux(t)
	suite.waitRunning(ctx, t, "kustomize-controller")
	suite.waitRunning(ctx, t, "source-controller")
	if _, found := sopsAgeSecret(t); found {
		t.Fatalf("precondition: Secret %s/%s already exists", fluxNS, agekey.DefaultSecretName)
	}

	key, recipient, err := agekeytest.NewIdentity()
	if err != nil {
		t.Fatal(err)
	}
	wrongKey, wrongRecipient, _ := agekeytest.NewIdentity()
	const value = "s3cr3t-from-sops"
	repo := t.TempDir()
	if err := agekeytest.WriteRepo(repo, agekeytest.Env{Name: "e2e", Recipients: []string{recipient}, Value: value}); err != nil {
		t.Fatal(err)
	}
	args := []string{"--repo", repo, "--path", "clusters/e2e"}

	t.Run("WrongKeyRefusedNothingInstalled", func(t *testing.T) {
		r := ageKeyCLI(t, wrongKey, append(args, "--age-key-file", "-")...)
		if r.code != 1 || r.report.Changed || !strings.HasPrefix(r.report.check("age-key.recipient/apps/e2e/secret.sops.yaml"), "fail") ||
			!strings.HasPrefix(r.report.check("age-key.secret-applied"), "skip") {
			t.Fatalf("want a refusal before install:\n%s", r)
		}
		if _, found := sopsAgeSecret(t); found {
			t.Fatal("the wrong key was refused but a Secret was installed")
		}
		if !strings.Contains(r.report.check("age-key.recipient/apps/e2e/secret.sops.yaml"), wrongRecipient) {
			t.Errorf("refusal should name the key's recipient:\n%s", r)
		}
	})
	t.Run("VerifyFailsWithoutSecret", func(t *testing.T) {
		r := ageKeyCLI(t, "", append([]string{"verify"}, args...)...)
		if r.code != 1 || !strings.Contains(r.report.check("age-key.secret"), "not found") {
			t.Fatalf("verify without the Secret:\n%s", r)
		}
	})
	t.Run("InstallThenRerunUnchanged", func(t *testing.T) {
		r := ageKeyCLI(t, key, append(args, "--age-key-file", "-")...)
		if r.code != 0 || !r.report.Changed || !strings.Contains(r.report.check("age-key.secret-applied"), "created") ||
			!strings.HasPrefix(r.report.check("age-key.installed-decrypts"), "pass") {
			t.Fatalf("install:\n%s\n%s", r, r.stderr)
		}
		s, found := sopsAgeSecret(t)
		if !found {
			t.Fatal("no Secret after install")
		}
		ids, keys, err := agekey.SecretIdentities(s)
		if err != nil || len(keys) != 1 || keys[0] != agekey.DataKey || !ids.Has(recipient) || len(ids.Keys) != 1 {
			t.Fatalf("installed Secret: keys %v, err %v", keys, err)
		}
		again := ageKeyCLI(t, key, append(args, "--age-key-file", "-")...)
		if again.code != 0 || again.report.Changed || !strings.Contains(again.report.check("age-key.secret-applied"), "unchanged") {
			t.Fatalf("re-run should be unchanged:\n%s", again)
		}
	})
	t.Run("KustomizeControllerDecryptsWithIt", func(t *testing.T) {
		gitRepo, sha, err := suite.git.CreateRepo(ctx, "agekey", repo)
		if err != nil {
			t.Fatal(err)
		}
		src := gitRepository("agekey", gitRepo.URL)
		ks := kustomization("agekey-apps", "./apps/e2e")
		ks.Spec.SourceRef.Name = "agekey"
		ks.Spec.Decryption = &kustomizev1.Decryption{Provider: "sops", SecretRef: &meta.LocalObjectReference{Name: agekey.DefaultSecretName}}
		for _, o := range []client.Object{src, ks} {
			if err := suite.client.Create(ctx, o); err != nil {
				t.Fatalf("create %s: %v", o.GetName(), err)
			}
		}
		rev := gitRepo.Revision(sha)
		waitFor(ctx, t, suite.client, &kustomizev1.KustomizationList{}, fluxNS, "agekey-apps", func(k *kustomizev1.Kustomization) (bool, string) {
			st, reason, msg, cur := readyStatus(k.Generation, k.Status.Conditions)
			return st == metav1.ConditionTrue && cur && k.Status.LastAppliedRevision == rev,
				fmt.Sprintf("Ready=%s %s %q lastApplied=%s", st, reason, msg, k.Status.LastAppliedRevision)
		})
		got, err := suite.cs.CoreV1().Secrets("default").Get(ctx, "app-secret", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if string(got.Data["value"]) != value {
			t.Fatalf("applied Secret value %q, want the decrypted %q", got.Data["value"], value)
		}
		t.Logf("kustomize-controller applied default/app-secret decrypted with the installed key at %s", rev)
	})
	// Negative control: the same path decrypted with a Secret that holds
	// another key fails in the controller, so the value above came from the
	// key bootstrap installed.
	t.Run("ControllerFailsWithAnotherKey", func(t *testing.T) {
		ids, err := agekey.Parse([]byte(wrongKey), "test")
		if err != nil {
			t.Fatal(err)
		}
		wrong := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: fluxNS, Name: "sops-age-wrong"}, Data: map[string][]byte{agekey.DataKey: ids.SecretData()}}
		ks := kustomization("agekey-wrong", "./apps/e2e")
		ks.Spec.SourceRef.Name = "agekey"
		ks.Spec.TargetNamespace = "agekey-wrong"
		ks.Spec.Decryption = &kustomizev1.Decryption{Provider: "sops", SecretRef: &meta.LocalObjectReference{Name: wrong.Name}}
		for _, o := range []client.Object{wrong, ks} {
			if err := suite.client.Create(ctx, o); err != nil {
				t.Fatalf("create %s: %v", o.GetName(), err)
			}
		}
		k := waitFor(ctx, t, suite.client, &kustomizev1.KustomizationList{}, fluxNS, "agekey-wrong", func(k *kustomizev1.Kustomization) (bool, string) {
			st, reason, msg, cur := readyStatus(k.Generation, k.Status.Conditions)
			return st == metav1.ConditionFalse && cur && strings.Contains(msg, "decrypt"), fmt.Sprintf("Ready=%s %s %q", st, reason, msg)
		})
		_, _, msg, _ := readyStatus(k.Generation, k.Status.Conditions)
		t.Logf("with another key: %s", firstLine(msg))
	})
	t.Run("Verify", func(t *testing.T) {
		r := ageKeyCLI(t, "", append([]string{"verify"}, args...)...)
		if r.code != 0 || !strings.HasPrefix(r.report.check("age-key.decrypt/apps/e2e/secret.sops.yaml"), "pass") {
			t.Fatalf("verify:\n%s", r)
		}
	})
	t.Run("DifferentKeyNeedsRotate", func(t *testing.T) {
		before, _ := sopsAgeSecret(t)
		r := ageKeyCLI(t, wrongKey, append(args, "--age-key-file", "-", "--force")...)
		if r.code != 1 || r.report.Changed || !strings.Contains(r.report.check("age-key.rotation"), "--rotate") {
			t.Fatalf("a different key without --rotate:\n%s", r)
		}
		after, _ := sopsAgeSecret(t)
		if after.ResourceVersion != before.ResourceVersion {
			t.Fatal("the Secret changed although the rotation was refused")
		}
	})
	t.Run("RotateAwayAndBack", func(t *testing.T) {
		// --rotate --force installs a key that decrypts nothing: warnings,
		// and verify then fails; rotating back makes verify pass again.
		r := ageKeyCLI(t, wrongKey, append(args, "--age-key-file", "-", "--force", "--rotate")...)
		if r.code != 0 || !r.report.Changed || !strings.HasPrefix(r.report.check("age-key.installed-decrypts"), "warn") {
			t.Fatalf("forced rotation:\n%s", r)
		}
		if v := ageKeyCLI(t, "", append([]string{"verify"}, args...)...); v.code != 1 {
			t.Fatalf("verify with a key that decrypts nothing:\n%s", v)
		}
		back := ageKeyCLI(t, key, append(args, "--age-key-file", "-", "--rotate")...)
		if back.code != 0 || !back.report.Changed || !strings.Contains(back.report.check("age-key.rotation"), wrongRecipient) {
			t.Fatalf("rotate back:\n%s", back)
		}
		if v := ageKeyCLI(t, "", append([]string{"verify"}, args...)...); v.code != 0 {
			t.Fatalf("verify after rotating back:\n%s", v)
		}
	})
}
