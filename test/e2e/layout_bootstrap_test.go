//go:build e2e

package e2e

// The `flux bootstrap` layout (testdata/layouts/bootstrap, ours) against
// the sandbox: `up` renders the controllers with the patches of
// clusters/staging/flux-system/kustomization.yaml and proves them live,
// syncs the root (which applies that directory again: the committed
// gotk-components.yaml, here `bootstrap render --plain` of the pinned
// release, with the same patches), converges, and `status` then finds no
// drift: the customization the root keeps applying is the one proven.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/agekey"
	"github.com/homelab-ops/bootstrap/internal/agekey/agekeytest"
	"github.com/homelab-ops/bootstrap/internal/controllers"
	"github.com/homelab-ops/bootstrap/internal/converge"
	"github.com/homelab-ops/bootstrap/internal/rootsync"
	"github.com/homelab-ops/bootstrap/pkg/patches"
)

// bootstrapLayoutEdits makes the layout fixture reconcile in the sandbox:
// the source is the suite's Git server (no credentials), and the
// infrastructure and apps are ConfigMaps instead of remote charts.
func bootstrapLayoutEdits(url string) map[string]string {
	cm := func(ns, name string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  layout: bootstrap\n", name, ns)
	}
	ns := func(name string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", name)
	}
	return map[string]string{
		"clusters/staging/flux-system/gotk-sync.yaml": "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 1m0s\n  ref:\n    branch: main\n  url: " + url + "\n" +
			"---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m0s\n  path: ./clusters/staging\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
		"infrastructure/controllers/cert-manager.yaml": ns("layout-infra") + "---\n" + cm("layout-infra", "controllers"),
		"infrastructure/configs/cluster-issuers.yaml":  cm("layout-infra", "configs"),
		"apps/base/podinfo/namespace.yaml":             ns("layout-apps"),
		"apps/base/podinfo/release.yaml":               cm("layout-apps", "podinfo"),
		"apps/base/podinfo/repository.yaml":            "",
		"apps/base/podinfo/kustomization.yaml":         "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - namespace.yaml\n  - release.yaml\n",
		"apps/staging/kustomization.yaml":              "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../base/podinfo\n",
		"apps/staging/podinfo-values.yaml":             "",
		"apps/production/podinfo-values.yaml":          "",
		"apps/production/kustomization.yaml":           "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../base/podinfo\n",
	}
}

func TestBootstrapLayout(t *testing.T) {
	ctx := timeoutCtx(t, 12*time.Minute)
	ensureFlux(t)
	// The root prunes what it applied when deleted: here that is Flux
	// itself. Like `flux uninstall`, the cleanup turns pruning off first.
	t.Cleanup(func() { keepFluxOnDelete(t) })

	name := freshRepoName("layout-bootstrap")
	url := suite.git.URL + "/" + name + ".git"
	fixture := filepath.Join(suite.root, "testdata", "layouts", "bootstrap")
	edits := bootstrapLayoutEdits(url)
	key, value := sopsFallbackEdits(t, fixture, edits)
	repoDir := copyDir(t, fixture, edits)
	// What `flux bootstrap` commits: the plain render of the release.
	fsd := filepath.Join(repoDir, "clusters", "staging", "flux-system")
	if err := os.Remove(filepath.Join(fsd, "gotk-components.yaml")); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if r := bootstrapJSON(t, "render", "--plain", "--flux-version", "v2.9.5", "--output-dir", out); r.code != 0 {
		t.Fatalf("render --plain:\n%s", r)
	}
	data, err := os.ReadFile(filepath.Join(out, "gotk-components.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fsd, "gotk-components.yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	gitRepo, sha, err := suite.git.CreateRepo(ctx, name, repoDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gitRepo.Close() })
	rev := gitRepo.Revision(sha)
	env := []string{"--repo", repoDir, "--env", "staging"}
	const kust = "clusters/staging/flux-system/kustomization.yaml"
	const sopsFile = "apps/staging/secret.sops.yaml"

	// Negative control: as ensureFlux left it, kustomize-controller runs
	// without --sops-age-secret, so nothing would decrypt the apps' file
	// with the key: `age-key` alone (the live flag) proves nothing and
	// installs nothing.
	if r := bootstrapJSONIn(t, key, append([]string{"age-key", "--age-key-file", "-"}, env...)...); r.code == 0 || r.report.Changed ||
		!strings.HasPrefix(r.report.check(agekey.GateScope.ID), "skip") || !strings.Contains(r.report.evidence(agekey.GateScope.ID), "runs without --sops-age-secret") {
		t.Errorf("age-key before the repository's --sops-age-secret is live: want the scope to skip, naming the missing flag, and nothing installed\n%s\n%s", r, r.report.evidence(agekey.GateScope.ID))
	}

	up := bootstrapJSONIn(t, key, append([]string{"up", "--flux-version", "v2.9.5", "--timeout", "4m", "--age-key-file", "-"}, env...)...)
	if up.code != 0 {
		t.Fatalf("up of the flux bootstrap layout: want exit 0\n%s", up)
	}
	// The key's scope followed the render's --sops-age-secret (the
	// repository's patch): the apps' file, decrypted through the flag with
	// no secretRef, was proven before install, and the live flag was found.
	if c := up.report.check(agekey.GateScope.ID); !strings.HasPrefix(c, "pass") || !strings.Contains(c, "1 SOPS file") {
		t.Errorf("%s: %s, want the apps' file in scope through --sops-age-secret", agekey.GateScope.ID, c)
	}
	if c := up.report.check(agekey.GateDecrypt.Each(sopsFile).ID); !strings.HasPrefix(c, "pass") {
		t.Errorf("%s: %s", agekey.GateDecrypt.Each(sopsFile).ID, c)
	}
	if c := up.report.check(rootsync.GateDecryption.Each("sops-age-secret").ID); !strings.HasPrefix(c, "pass") {
		t.Errorf("the sync's --sops-age-secret gate: %s", c)
	}
	// The real kustomize-controller decrypted it with the installed key.
	var sec corev1.Secret
	if err := suite.client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "layout-secret"}, &sec); err != nil || string(sec.Data["value"]) != value {
		t.Errorf("default/layout-secret: %v, value %q, want the decrypted %q", err, sec.Data["value"], value)
	}
	if c := up.report.check(patches.GateCommitted.ID); !strings.HasPrefix(c, "pass") {
		t.Errorf("%s: %s", patches.GateCommitted.ID, c)
	}
	if c := up.report.check(patches.GatePatchLanded.ID + "/1"); !strings.HasPrefix(c, "pass") || !strings.Contains(c, kust+" patches[0]") {
		t.Errorf("the repository's patch is not proven naming its file: %s", c)
	}
	if c := up.report.check(controllers.GateFlagsLive.ID); !strings.HasPrefix(c, "pass") {
		t.Errorf("%s: %s", controllers.GateFlagsLive.ID, c)
	}
	for _, n := range []string{"flux-system", "infra-controllers", "infra-configs", "apps"} {
		if c := up.report.check(nodeGate(n)); !strings.HasPrefix(c, "pass") || !strings.Contains(c, rev) {
			t.Errorf("up: %s: %s, want pass at %s", n, c, rev)
		}
	}

	// The root has applied flux-system/ again: the live controller is the
	// patched one, not the committed plain export.
	var d appsv1.Deployment
	if err := suite.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: "kustomize-controller"}, &d); err != nil {
		t.Fatal(err)
	}
	if args := d.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--requeue-dependency=5s") {
		t.Errorf("live kustomize-controller args %q lack the repository's --requeue-dependency=5s", args)
	}

	if r := convergeCLI(t, append(env, "--timeout", "2m")...); r.code != 0 {
		t.Errorf("converge: want exit 0\n%s", r)
	}
	st := statusHealthy(t, "status of the flux bootstrap layout", env...)
	for _, id := range []string{controllers.GateDrift.ID, controllers.GateFlagsLive.ID, converge.GateGraph.ID} {
		if v := st.verdict(id); v != "pass" {
			t.Errorf("status: %s: %s, want pass", id, st.report.check(id))
		}
	}
	// Without the environment, status compares with the built-in overlays:
	// the repository's --requeue-dependency=5s is drift then, so the
	// environment is what makes the verdict right.
	if r := statusCLI(t, "--flux-version", "v2.9.5"); r.verdict(controllers.GateDrift.ID) == "pass" {
		t.Errorf("status without --env: drift %s, want the repository's patch seen as drift from the built-in overlays", r.report.check(controllers.GateDrift.ID))
	}
}

// sopsFallbackEdits adds to edits what the Flux docs' global decryption
// asks of a `flux bootstrap` repository: kustomize-controller patched with
// --sops-age-secret=sops-age in flux-system/kustomization.yaml, and the
// apps Kustomization decrypting with provider sops and no secretRef. The
// apps gain default/layout-secret, SOPS-encrypted to a new key; it returns
// the key and the Secret's plain value.
func sopsFallbackEdits(t *testing.T, fixture string, edits map[string]string) (key, value string) {
	t.Helper()
	key, recipient, err := agekeytest.NewIdentity()
	if err != nil {
		t.Fatal(err)
	}
	value = "decrypted-through-the-fallback"
	enc, err := agekeytest.EncryptedSecret("layout-secret", value, recipient)
	if err != nil {
		t.Fatal(err)
	}
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(fixture, rel))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	const kust, apps = "clusters/staging/flux-system/kustomization.yaml", "clusters/staging/apps.yaml"
	k := read(kust)
	const last = "        value: --feature-gates=StrictPostBuildSubstitutions=true\n"
	if !strings.Contains(k, last) {
		t.Fatalf("%s: the fixture changed; no %q to add the flag after", kust, last)
	}
	edits[kust] = strings.Replace(k, last, last+"      - op: add\n        path: /spec/template/spec/containers/0/args/-\n        value: --sops-age-secret=sops-age\n", 1)
	edits[apps] = read(apps) + "  decryption:\n    provider: sops\n"
	edits["apps/staging/secret.sops.yaml"] = enc
	edits["apps/staging/kustomization.yaml"] += "  - secret.sops.yaml\n"
	return key, value
}

// keepFluxOnDelete turns pruning off on the root Kustomization, so that
// deleting it (the next ensureFlux's removeFixtures) leaves the controllers it
// applied in place; unmanageFlux then removes the labels it left on them.
func keepFluxOnDelete(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var k kustomizev1.Kustomization
	if err := suite.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: fluxNS}, &k); err != nil {
		return
	}
	patch := client.MergeFrom(k.DeepCopy())
	k.Spec.Prune, k.Spec.Suspend = false, true
	if err := suite.client.Patch(ctx, &k, patch); err != nil {
		t.Errorf("turn pruning off on the root: %v", err)
	}
}
