//go:build e2e

package e2e

// The cluster-template's helmfile layout (testdata/layouts/helmfile, ours)
// against a fresh sandbox: its bootstrap installs flux-operator and the
// flux-instance chart whose values declare the root, and renders a
// resources template of Secrets from a secret manager before Flux. `up`
// finds the root in those values, creates what the operator would, and
// names the Secret the repository does not hold (cluster-secrets, with the
// keys its readers use and the template declaring it); supplied with
// --supply, everything comes up at the served revision.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/rootsync"
)

func TestHelmfileLayoutUp(t *testing.T) {
	ctx := timeoutCtx(t, 15*time.Minute)
	e, err := startEnv(ctx, suite.envConfig, "helmfile-up", t.TempDir(), envOptions{runner: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.teardown()
	const ns = "layout-helmfile"
	fixture := filepath.Join(suite.root, "testdata", "layouts", "helmfile")
	name := freshRepoName("layout-helmfile")
	url := suite.git.URL + "/" + name + ".git"
	read := func(rel, old, new string) string {
		b, err := os.ReadFile(filepath.Join(fixture, rel))
		if err != nil || !strings.Contains(string(b), old) {
			t.Fatalf("%s: %v, or no %q", rel, err, old)
		}
		return strings.Replace(string(b), old, new, 1)
	}
	repo := copyDir(t, fixture, map[string]string{
		"bootstrap/helmfile.d/values-flux-instance.yaml": read("bootstrap/helmfile.d/values-flux-instance.yaml", "https://git.example.invalid/homelab/helmfile-layout.git", url),
		"kubernetes/apps/default/echo/ks.yaml":           read("kubernetes/apps/default/echo/ks.yaml", "targetNamespace: default", "targetNamespace: "+ns),
		"kubernetes/apps/default/namespace.yaml":         "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + ns + "\n",
		"kubernetes/apps/default/kustomization.yaml":     read("kubernetes/apps/default/kustomization.yaml", "resources:\n", "resources:\n  - ./namespace.yaml\n"),
	})
	gitRepo, sha, err := suite.git.CreateRepo(ctx, name, repo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gitRepo.Close() })
	rev := gitRepo.Revision(sha)
	args := []string{"up", "--repo", repo, "--flux-version", "v2.9.5", "--timeout", "4m"}

	// Named, with its keys and the template that makes it, and refused
	// before any write.
	r, _ := dryRunCLI(t, e, "", args...)
	id := rootsync.GateSupplyNeeded.Each("Secret/flux-system/cluster-secrets").ID
	if c := r.report.check(id); r.code != 1 || r.report.Changed || !strings.HasPrefix(c, "fail") || !strings.Contains(c, "keys SECRET_ACME_EMAIL, SECRET_DOMAIN") ||
		!strings.Contains(c, "resources template bootstrap/resources.yaml.j2") || !strings.Contains(c, "--supply FILE") {
		t.Fatalf("up without cluster-secrets: want %s failing, naming its keys, the template and --supply, nothing changed\n%s", id, r)
	}
	var nsObj corev1.Namespace
	if err := e.client.Get(ctx, client.ObjectKey{Name: fluxNS}, &nsObj); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s after the refusal: %v, want not found (nothing written)", fluxNS, err)
	}

	const domain = "supplied.example.test"
	supply := filepath.Join(t.TempDir(), "secrets.yaml")
	if err := os.WriteFile(supply, []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: cluster-secrets\n  namespace: flux-system\ntype: Opaque\nstringData:\n  SECRET_DOMAIN: "+domain+"\n  SECRET_ACME_EMAIL: ops@"+domain+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The plan of the bring-up the helmfile bootstrap makes: the
	// template's Secret, supplied, before the root; nothing written.
	r, _ = dryRunCLI(t, e, "", append(args, "--supply", supply, "--dry-run")...)
	if n := planNotes(t, r.stdout)["Secret/flux-system/cluster-secrets"]; r.code != 0 || !strings.Contains(n, "supplied by --supply "+supply) {
		t.Fatalf("up --dry-run --supply: want exit 0 and the Secret planned as supplied (note %q)\n%s", n, r)
	}
	var before corev1.Namespace
	if err := e.client.Get(ctx, client.ObjectKey{Name: fluxNS}, &before); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s after the dry run: %v, want not found", fluxNS, err)
	}
	r, _ = dryRunCLI(t, e, "", append(args, "--supply", supply)...)
	if r.code != 0 {
		t.Fatalf("up --supply of the helmfile layout: want exit 0\n%s", r)
	}
	if strings.Contains(r.stdout+r.stderr, "ops@"+domain) {
		t.Errorf("up --supply prints a supplied value")
	}
	if c := r.report.check(rootsync.GateSupplied.Each("Secret/flux-system/cluster-secrets").ID); !strings.HasPrefix(c, "pass") {
		t.Errorf("inputs.supplied: %s", c)
	}
	for _, n := range []string{"flux-system", "cluster-apps", "echo"} {
		if c := r.report.check(nodeGate(n)); !strings.HasPrefix(c, "pass") || !strings.Contains(c, rev) {
			t.Errorf("up --supply: %s: %s, want pass at %s", n, c, rev)
		}
	}
	var echo corev1.ConfigMap
	if err := e.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "echo"}, &echo); err != nil || echo.Data["HOST"] != "echo."+domain {
		t.Errorf("%s/echo: %v, data %v: want the supplied values substituted", ns, err, echo.Data)
	}
}
