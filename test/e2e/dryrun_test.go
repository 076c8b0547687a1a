//go:build e2e

package e2e

// `up --dry-run` on a cluster that never had Flux plans every phase (issue
// 46 item 3): the controllers (server-side dry runs where the API server
// can take them), the age key's Secret in the namespace the controllers
// create, the root validated offline against the CRDs the controllers
// install, and the graph converge would walk. The real `up` afterwards
// applies exactly the objects the plan listed; a root object invalid
// against the release's CRDs fails the dry run.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// dryRunCLI runs bootstrap -o json against e, the age key on stdin, and
// returns the run and its phases' verdicts.
func dryRunCLI(t *testing.T, e *env, stdin string, args ...string) (syncRun, map[string]string) {
	t.Helper()
	full := append(append([]string{}, args...), "-o", "json", "--kubeconfig", e.sb.KubeconfigPath)
	cmd := exec.Command(bootstrapCLI(t), full...)
	cmd.Stdin = strings.NewReader(stdin)
	var r syncRun
	r.code, r.stdout, r.stderr, r.report = runJSON(t, cmd)
	var doc struct {
		Phases []struct{ Name, Verdict string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	phases := map[string]string{}
	for _, p := range doc.Phases {
		phases[p.Name] = p.Verdict
	}
	if strings.Contains(strings.ToUpper(r.stdout+r.stderr), "AGE-SECRET-KEY-") {
		t.Errorf("bootstrap %s: the output holds age key material", strings.Join(args, " "))
	}
	return r, phases
}

// objectSet is the report's object changes as "action object", sorted.
func objectSet(r cliReport) []string {
	var out []string
	for _, o := range r.Objects {
		out = append(out, o.Action+" "+o.Object)
	}
	slices.Sort(out)
	return out
}

// problems lists the report's failed and required-skipped checks.
func problems(r cliReport) string {
	var out []string
	for _, c := range r.Checks {
		if c.Verdict == "fail" || c.Verdict == "skip" {
			out = append(out, c.ID+": "+c.Verdict+": "+c.Message)
		}
	}
	return strings.Join(out, "\n")
}

func TestDryRunFreshCluster(t *testing.T) {
	ctx := timeoutCtx(t, 15*time.Minute)
	e, err := startEnv(ctx, suite.envConfig, "dryrun", t.TempDir(), envOptions{runner: true, git: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.teardown()
	key, enc := sopsFixtureSecret(t, "dryrun-s3cr3t")
	url := e.git.URL + "/homelab-dryrun.git"
	edits := map[string]string{
		"clusters/dev/source.yaml":      sourcePatch(url),
		"clusters/prod/source.yaml":     sourcePatch(url),
		"apps/secrets/secret.sops.yaml": enc,
	}
	repoDir := copyDir(t, filepath.Join(suite.root, "testdata", "homelab"), edits)
	gitRepo, _, err := e.git.CreateRepo(ctx, "homelab-dryrun", repoDir)
	if err != nil {
		t.Fatal(err)
	}
	defer gitRepo.Close()
	up := []string{"up", "--repo", repoDir, "--env", "dev", "--age-key-file", "-", "--timeout", "4m"}
	untouched := func(t *testing.T, what string) {
		t.Helper()
		var ns corev1.Namespace
		if err := e.client.Get(ctx, client.ObjectKey{Name: fluxNS}, &ns); !apierrors.IsNotFound(err) {
			t.Fatalf("%s wrote to the cluster: namespace %s: %v", what, fluxNS, err)
		}
	}

	t.Run("InvalidRootObjectFails", func(t *testing.T) {
		// apps-core's required spec.interval misspelled: kustomize-
		// controller's CRD refuses it. --check=false: the offline check
		// (phase static) would refuse it first; this proves the sync's own
		// validation against the CRDs the controllers phase installs.
		bad := maps(edits, "clusters/base/apps.yaml", strings.Replace(readFixture(t, "clusters/base/apps.yaml"), "  interval: 10m\n", "  intreval: 10m\n", 1))
		dir := copyDir(t, filepath.Join(suite.root, "testdata", "homelab"), bad)
		r, _ := dryRunCLI(t, e, key, "up", "--repo", dir, "--env", "dev", "--age-key-file", "-", "--check=false", "--dry-run")
		got := r.report.check("sync.planned")
		if r.code != 1 || !strings.HasPrefix(got, "fail: ") || !strings.Contains(got, "Kustomization/flux-system/apps-core") || !strings.Contains(got, "spec.interval") {
			t.Fatalf("dry run with an invalid root object: exit %d, sync.planned %q; want exit 1 and a fail naming apps-core's spec.interval\n%s", r.code, got, problems(r.report))
		}
		t.Logf("sync.planned: %s", got)
		untouched(t, "the failed dry run")
	})

	t.Run("RefusedControllerObjectFails", func(t *testing.T) {
		// An overlay the render proofs accept (the strict gate kept) but
		// the API server refuses: a CRD whose scope is not Namespaced or
		// Cluster. The controllers' dry run asks the API server about the
		// objects it creates (cluster-scoped here: the Flux namespace does
		// not exist yet) and fails with its words; nothing is written.
		ov := t.TempDir()
		if err := os.CopyFS(ov, os.DirFS(filepath.Join(suite.root, "overlays"))); err != nil {
			t.Fatal(err)
		}
		crd := "kustomizations.kustomize.toolkit.fluxcd.io"
		writeFiles(t, ov, map[string]string{
			"scope.yaml":         "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: " + crd + "\nspec:\n  scope: Galaxy\n",
			"kustomization.yaml": readFile(t, filepath.Join(ov, "kustomization.yaml")) + "  - path: scope.yaml\n    target:\n      kind: CustomResourceDefinition\n      name: " + crd + "\n",
		})
		r, _ := dryRunCLI(t, e, key, "controllers", "--overlays", ov, "--dry-run")
		got := r.report.check("controllers.dry-run")
		if r.code != 1 || !strings.HasPrefix(got, "fail: the API server refuses") || !strings.Contains(got, "CustomResourceDefinition/"+crd) || !strings.Contains(got, "Galaxy") {
			t.Fatalf("controllers --dry-run with a CRD the API server refuses: exit %d, controllers.dry-run %q; want exit 1 and a fail naming the CRD and its scope\n%s", r.code, got, problems(r.report))
		}
		t.Logf("controllers.dry-run: %s", got)
		untouched(t, "the refused dry run")
	})

	var plan syncRun
	t.Run("DryRunPlansEveryPhase", func(t *testing.T) {
		var phases map[string]string
		plan, phases = dryRunCLI(t, e, key, append(slices.Clone(up), "--dry-run")...)
		if plan.code != 0 {
			t.Fatalf("up --dry-run on a fresh cluster: exit %d (%s)\n%s", plan.code, plan.report.Error, problems(plan.report))
		}
		for _, p := range []string{"static", "controllers", "age-key", "sync", "converge"} {
			if v := phases[p]; v != "pass" && v != "warn" {
				t.Errorf("phase %s: %q, want it planned (pass or warn)", p, v)
			}
		}
		for id, want := range map[string]string{
			"sync.planned": "warn: planned: ",
			"sync.decryption-secret/flux-system/sops-age": "warn: planned: ",
			"controllers.dry-run":                         "warn: planned: ",
			"converge.graph":                              "pass: ",
			"converge.node/flux-system/apps-web":          "skip: planned: ",
		} {
			if got := plan.report.check(id); !strings.HasPrefix(got, want) {
				t.Errorf("%s: %q, want %q…", id, got, want)
			}
		}
		for _, want := range []string{"created Namespace/flux-system", "created CustomResourceDefinition/kustomizations.kustomize.toolkit.fluxcd.io",
			"created Secret/flux-system/sops-age", "created GitRepository/flux-system/flux-system", "created Kustomization/flux-system/flux-system"} {
			if !slices.Contains(objectSet(plan.report), want) {
				t.Errorf("the plan does not list %q:\n%s", want, strings.Join(objectSet(plan.report), "\n"))
			}
		}
		t.Logf("plan: exit 0, %d object(s); %s; %s", len(plan.report.Objects), plan.report.check("sync.planned"), plan.report.check("controllers.dry-run"))
		untouched(t, "the dry run")
	})

	t.Run("ServeDryRunPlansEveryPhase", func(t *testing.T) {
		// The cold bring-up's plan: --serve, this machine the temporary
		// source, on a work tree that is a Git checkout.
		work := copyDir(t, filepath.Join(suite.root, "testdata", "homelab"), edits)
		git(t, work, "init", "--quiet", "--initial-branch=main")
		git(t, work, "add", "--all")
		git(t, work, "commit", "--quiet", "-m", "homelab")
		full := append([]string{"up", "--repo", work, "--env", "dev", "--age-key-file", "-", "--serve", "--dry-run"}, "-o", "json", "--kubeconfig", e.sb.KubeconfigPath)
		cmd := exec.Command(bootstrapCLI(t), full...)
		cmd.Stdin = strings.NewReader(key)
		cmd.Env = append(os.Environ(), "BOOTSTRAP_STATE_DIR="+t.TempDir())
		code, _, stderr, r := runJSON(t, cmd)
		if code != 0 || !strings.HasPrefix(r.check("sync.planned"), "warn: planned: ") || !strings.HasPrefix(r.check("sync.temporary-source"), "pass") {
			t.Fatalf("up --serve --dry-run on a fresh cluster: exit %d (%s)\n%s\n%s", code, r.Error, problems(r), stderr)
		}
		t.Logf("up --serve --dry-run: exit 0; %s", r.check("sync.temporary-source"))
		untouched(t, "the --serve dry run")
	})

	t.Run("UpAppliesWhatThePlanListed", func(t *testing.T) {
		if plan.report.Objects == nil {
			t.Skip("no plan (DryRunPlansEveryPhase failed)")
		}
		r, _ := dryRunCLI(t, e, key, up...)
		if r.code != 0 {
			t.Fatalf("up after the dry run: exit %d (%s)\n%s", r.code, r.report.Error, problems(r.report))
		}
		// The objects (kind/namespace/name) are the plan's, exactly.
		names := func(r cliReport) []string {
			var out []string
			for _, o := range r.Objects {
				out = append(out, o.Object)
			}
			slices.Sort(out)
			return out
		}
		planned, applied := names(plan.report), names(r.report)
		if !slices.Equal(planned, applied) {
			t.Fatalf("up applied other objects than the plan listed:\nonly planned: %v\nonly applied: %v", minus(planned, applied), minus(applied, planned))
		}
		// And what happened to each is what the plan said, but for the
		// Flux namespace: the real run's cluster lock creates it before
		// the controllers phase, which then configures it (its labels).
		lock := func(s []string) []string {
			return slices.DeleteFunc(slices.Clone(s), func(x string) bool { return strings.HasSuffix(x, " Namespace/"+fluxNS) })
		}
		if p, a := lock(objectSet(plan.report)), lock(objectSet(r.report)); !slices.Equal(p, a) {
			t.Fatalf("up did other things than the plan listed:\nonly planned: %v\nonly applied: %v", minus(p, a), minus(a, p))
		}
		t.Logf("up: exit 0; the %d object change(s) it reports are the %d the dry run listed", len(applied), len(planned))
	})
}

// maps is m with k set to v (a copy).
func maps(m map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for mk, mv := range m {
		if mk != k {
			out[mk] = mv
		}
	}
	return out
}

// minus is what a holds that b does not.
func minus(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}
