//go:build e2e

package e2e

// The flux-cluster-template layout (testdata/layouts/taskfile, ours)
// against the sandbox: its bootstrap (a Taskfile) applies the vars the root
// substitutes from before the root's first reconcile; `up` does the same in
// one command — it seeds them from the repository (the SOPS Secret
// decrypted with the age key it installs), as kustomize-controller will
// apply them, and the root adopts them with no drift. An object nobody
// renders is refused before any write, and applied from --supply.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/agekey"
	"github.com/homelab-ops/bootstrap/internal/agekey/agekeytest"
	"github.com/homelab-ops/bootstrap/internal/rootsync"
	"github.com/homelab-ops/bootstrap/internal/sandbox/gitserver"
)

// lastTaskfileRepo is the repository taskfileRepo served last (the tests
// using it run one at a time).
var lastTaskfileRepo *gitserver.Repo

const (
	taskfileNS      = "layout-taskfile"
	taskfileCluster = "kubernetes/flux/config/cluster.yaml"
)

// taskfileRepo is a copy of the layout served by the suite's Git server:
// the GitRepository reads it there, the apps deploy into a namespace of
// their own, and cluster-secrets is SOPS-encrypted to a fresh key (the
// fixture's is a placeholder), its keys sorted as kubectl writes them (as
// kustomize-controller decrypts it). It returns the work tree, the key,
// the Secret's value and the served revision; lastTaskfileRepo is the
// served repository, for a test that commits to it.
func taskfileRepo(ctx context.Context, t *testing.T, edits map[string]string) (repo, key, value, rev string) {
	t.Helper()
	fixture := filepath.Join(suite.root, "testdata", "layouts", "taskfile")
	name := freshRepoName("layout-taskfile")
	url := suite.git.URL + "/" + name + ".git"
	key, recipient, err := agekeytest.NewIdentity()
	if err != nil {
		t.Fatal(err)
	}
	value = "seeded-" + name + ".example.test"
	plain := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: cluster-secrets\n  namespace: flux-system\nstringData:\n  SECRET_DOMAIN: " + value + "\ntype: Opaque\n"
	enc, err := agekey.Encrypt("cluster-secrets.sops.yaml", []byte(plain), []string{recipient}, agekey.EncryptOptions{EncryptedRegex: "^(data|stringData)$"})
	if err != nil {
		t.Fatal(err)
	}
	read := func(rel, old, new string) string {
		b, err := os.ReadFile(filepath.Join(fixture, rel))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), old) {
			t.Fatalf("%s holds no %q", rel, old)
		}
		return strings.Replace(string(b), old, new, 1)
	}
	all := map[string]string{
		taskfileCluster: read(taskfileCluster, "https://git.example.invalid/owner/home-ops.git", url),
		"kubernetes/flux/vars/cluster-secrets.sops.yaml": string(enc),
		"kubernetes/apps/default/namespace.yaml":         read("kubernetes/apps/default/namespace.yaml", "name: default", "name: "+taskfileNS),
		"kubernetes/apps/default/echo/ks.yaml":           read("kubernetes/apps/default/echo/ks.yaml", "targetNamespace: default", "targetNamespace: "+taskfileNS),
	}
	for k, v := range edits {
		if k == taskfileCluster {
			v = strings.Replace(v, "https://git.example.invalid/owner/home-ops.git", url, 1)
		}
		all[k] = v
	}
	repo = copyDir(t, fixture, all)
	gitRepo, sha, err := suite.git.CreateRepo(ctx, name, repo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gitRepo.Close() })
	lastTaskfileRepo = gitRepo
	return repo, key, value, gitRepo.Revision(sha)
}

// taskfileUp is up's arguments for the layout, as a new user gives them:
// no --path and no --root (up finds the one cluster root, the
// self-applying flux-system/cluster at kubernetes/flux), the offline check
// on; the release is the sandbox's.
func taskfileUp(repo string, extra ...string) []string {
	return append([]string{"up", "--repo", repo, "--flux-version", "v2.9.5", "--timeout", "4m", "--age-key-file", "-"}, extra...)
}

// planNotes are the report's objects with their plan notes.
func planNotes(t *testing.T, stdout string) map[string]string {
	t.Helper()
	var doc struct {
		Objects []struct{ Object, Note string }
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, o := range doc.Objects {
		out[o.Object] = o.Note
	}
	return out
}

// managers are the field managers of obj's metadata and data (not status).
func managers(obj client.Object) []string {
	var out []string
	for _, m := range obj.GetManagedFields() {
		if m.Subresource == "" && !slices.Contains(out, m.Manager) {
			out = append(out, m.Manager)
		}
	}
	return out
}

func TestTaskfileLayoutUp(t *testing.T) {
	ctx := timeoutCtx(t, 12*time.Minute)
	ensureFlux(t)
	repo, key, value, rev := taskfileRepo(ctx, t, nil)

	// The plan names the seeds, never their values.
	dry := bootstrapJSONIn(t, key, taskfileUp(repo, "--dry-run")...)
	if dry.code != 0 {
		t.Fatalf("up --dry-run of the taskfile layout: want exit 0\n%s", dry)
	}
	notes := planNotes(t, dry.stdout)
	for obj, file := range map[string]string{"Secret/flux-system/cluster-secrets": "kubernetes/flux/vars/cluster-secrets.sops.yaml", "ConfigMap/flux-system/cluster-settings": "kubernetes/flux/vars/cluster-settings.yaml"} {
		if n := notes[obj]; !strings.Contains(n, rootsync.SeedNote) || !strings.Contains(n, file) {
			t.Errorf("dry run plan: %s note %q, want %q from %s", obj, n, rootsync.SeedNote, file)
		}
	}
	if strings.Contains(dry.stdout+dry.stderr, value) {
		t.Errorf("the dry run prints the seeded value")
	}

	up := bootstrapJSONIn(t, key, taskfileUp(repo)...)
	if up.code != 0 {
		t.Fatalf("up of the taskfile layout: want exit 0\n%s", up)
	}
	if strings.Contains(up.stdout+up.stderr, value) {
		t.Errorf("up prints the seeded value")
	}
	// The offline check ran: cluster-apps' race on the vars is a later
	// commit's, not this bring-up's (the seeds exist before the root).
	if c := up.report.check("check.race/flux-system/cluster-apps"); !strings.HasPrefix(c, "warn") || !strings.Contains(up.stdout, "not on this bring-up") {
		t.Errorf("up: check.race/flux-system/cluster-apps: %s, want a warning: not on this bring-up", c)
	}
	if f := up.report.Facts["root"]; !strings.Contains(f, "flux-system/cluster") {
		t.Errorf("up: facts root %q, want the adopted flux-system/cluster", f)
	}
	for _, id := range []string{"Secret/flux-system/cluster-secrets", "ConfigMap/flux-system/cluster-settings"} {
		if c := up.report.check(rootsync.GateSeed.Each(id).ID); !strings.HasPrefix(c, "pass") || !strings.Contains(c, rootsync.SeedNote) {
			t.Errorf("%s: %s", rootsync.GateSeed.Each(id).ID, c)
		}
		if f := up.report.Facts["seeds"]; !strings.Contains(f, id) {
			t.Errorf("facts seeds %q lack %s", f, id)
		}
	}
	for _, n := range []string{"cluster", "cluster-apps", "echo"} {
		if c := up.report.check(nodeGate(n)); !strings.HasPrefix(c, "pass") || !strings.Contains(c, rev) {
			t.Errorf("up: %s: %s, want pass at %s", n, c, rev)
		}
	}
	// The apps substituted the seeded values.
	var echo corev1.ConfigMap
	if err := suite.client.Get(ctx, client.ObjectKey{Namespace: taskfileNS, Name: "echo"}, &echo); err != nil || echo.Data["HOST"] != "echo."+value || echo.Data["CLUSTER"] != "home" {
		t.Errorf("%s/echo: %v, data %v: want the seeded values substituted", taskfileNS, err, echo.Data)
	}

	// The root adopted the seeds: its owner labels, kustomize-controller the
	// one field manager, and a reconcile of the root changes nothing.
	seeds := []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}}
	names := []string{"cluster-secrets", "cluster-settings"}
	rvs := map[string]string{}
	for i, obj := range seeds {
		if err := suite.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: names[i]}, obj); err != nil {
			t.Fatal(err)
		}
		l := obj.GetLabels()
		if l["kustomize.toolkit.fluxcd.io/name"] != "cluster" || l["kustomize.toolkit.fluxcd.io/namespace"] != fluxNS {
			t.Errorf("%s labels %v, want the root's owner labels", names[i], l)
		}
		if m := managers(obj); !slices.Equal(m, []string{"kustomize-controller"}) {
			t.Errorf("%s field managers %v, want kustomize-controller alone", names[i], m)
		}
		rvs[names[i]] = obj.GetResourceVersion()
	}
	if s := seeds[0].(*corev1.Secret); string(s.Data["SECRET_DOMAIN"]) != value {
		t.Errorf("cluster-secrets is not the decrypted value")
	}
	root := &kustomizev1.Kustomization{}
	root.Namespace, root.Name = fluxNS, "cluster"
	requestReconcile(ctx, t, root)
	waitFor(ctx, t, suite.client, &kustomizev1.KustomizationList{}, fluxNS, "cluster", func(k *kustomizev1.Kustomization) (bool, string) {
		handled := k.Status.LastHandledReconcileAt != "" && k.Status.LastHandledReconcileAt == k.GetAnnotations()["reconcile.fluxcd.io/requestedAt"]
		st, reason, msg, current := readyStatus(k.Generation, k.Status.Conditions)
		return handled && st == "True" && current, string(st) + " " + reason + ": " + msg
	})
	for i, obj := range seeds {
		if err := suite.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: names[i]}, obj); err != nil {
			t.Fatal(err)
		}
		if obj.GetResourceVersion() != rvs[names[i]] {
			t.Errorf("%s changed when the root reconciled again (resourceVersion %s → %s): the seed drifted from what the root applies", names[i], rvs[names[i]], obj.GetResourceVersion())
		}
		if m := managers(obj); !slices.Equal(m, []string{"kustomize-controller"}) {
			t.Errorf("%s field managers %v after the root's reconcile", names[i], m)
		}
	}
}

func TestTaskfileLayoutSupply(t *testing.T) {
	ctx := timeoutCtx(t, 15*time.Minute)
	e, err := startEnv(ctx, suite.envConfig, "taskfile-supply", t.TempDir(), envOptions{runner: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.teardown()
	fixture := filepath.Join(suite.root, "testdata", "layouts", "taskfile")
	cluster, err := os.ReadFile(filepath.Join(fixture, taskfileCluster))
	if err != nil {
		t.Fatal(err)
	}
	// The root also substitutes from Secret cluster-extra, which nothing
	// renders; a ConfigMap the root applies uses its key.
	const extraVar = "EXTRA_TOKEN"
	edits := map[string]string{
		taskfileCluster: strings.Replace(string(cluster), "        name: cluster-secrets\n", "        name: cluster-secrets\n      - kind: Secret\n        name: cluster-extra\n", 1),
		"kubernetes/flux/vars/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ./cluster-settings.yaml\n  - ./cluster-secrets.sops.yaml\n  - ./extra-user.yaml\n",
		"kubernetes/flux/vars/extra-user.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra-user\n  namespace: flux-system\ndata:\n  TOKEN: ${" + extraVar + "}\n",
	}
	repo, key, value, rev := taskfileRepo(ctx, t, edits)

	// Refused before any write, naming the object and the fix.
	r, _ := dryRunCLI(t, e, key, taskfileUp(repo)...)
	id := rootsync.GateRootInput.Each("Secret/flux-system/cluster-extra").ID
	if c := r.report.check(id); r.code == 0 || r.report.Changed || !strings.HasPrefix(c, "fail") || !strings.Contains(c, "Secret flux-system/cluster-extra") ||
		!strings.Contains(c, "--supply FILE") || !strings.Contains(c, extraVar) {
		t.Fatalf("up with cluster-extra nowhere: want a failure of %s naming it, its key and --supply, nothing changed\n%s", id, r)
	}
	var ns corev1.Namespace
	if err := e.client.Get(ctx, client.ObjectKey{Name: fluxNS}, &ns); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s after the refusal: %v, want not found (nothing written); managers %v\n%s", fluxNS, err, managers(&ns), r)
	}
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	if err := e.client.Get(ctx, client.ObjectKey{Name: "kustomizations.kustomize.toolkit.fluxcd.io"}, crd); !apierrors.IsNotFound(err) {
		t.Errorf("Flux's CRDs after the refusal: %v, want not found (nothing written)", err)
	}

	// Supplied from a file, SOPS-encrypted to the same key.
	ids, err := agekey.Parse([]byte(key), "test")
	if err != nil {
		t.Fatal(err)
	}
	recipient := ids.Recipients()[0]
	extraValue := "supplied-" + filepath.Base(repo)
	plain := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: cluster-extra\n  namespace: flux-system\ntype: Opaque\nstringData:\n  " + extraVar + ": " + extraValue + "\n"
	enc, err := agekey.Encrypt("extra.sops.yaml", []byte(plain), []string{recipient}, agekey.EncryptOptions{EncryptedRegex: "^(data|stringData)$"})
	if err != nil {
		t.Fatal(err)
	}
	supply := filepath.Join(t.TempDir(), "extra.sops.yaml")
	if err := os.WriteFile(supply, enc, 0o600); err != nil {
		t.Fatal(err)
	}
	r, _ = dryRunCLI(t, e, key, taskfileUp(repo, "--supply", supply)...)
	if r.code != 0 {
		t.Fatalf("up --supply: want exit 0\n%s", r)
	}
	for _, v := range []string{value, extraValue} {
		if strings.Contains(r.stdout+r.stderr, v) {
			t.Errorf("up --supply prints a value")
		}
	}
	if c := r.report.check(rootsync.GateSupplied.Each("Secret/flux-system/cluster-extra").ID); !strings.HasPrefix(c, "pass") || !strings.Contains(c, extraVar) {
		t.Errorf("inputs.supplied: %s", c)
	}
	if n := planNotes(t, r.stdout)["Secret/flux-system/cluster-extra"]; !strings.Contains(n, "supplied by --supply "+supply) {
		t.Errorf("plan note of the supplied Secret: %q", n)
	}
	for _, n := range []string{"cluster", "cluster-apps", "echo"} {
		if c := r.report.check(nodeGate(n)); !strings.HasPrefix(c, "pass") || !strings.Contains(c, rev) {
			t.Errorf("up --supply: %s: %s, want pass at %s", n, c, rev)
		}
	}
	var cm corev1.ConfigMap
	if err := e.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: "extra-user"}, &cm); err != nil || cm.Data["TOKEN"] != extraValue {
		t.Errorf("flux-system/extra-user: %v: want the supplied value substituted by the root", err)
	}
}
