package rootsync

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/homelab-ops/bootstrap/internal/kube"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

const fixture = "../../testdata/homelab"

// copyFixture copies the homelab fixture so a test can break it.
func copyFixture(t *testing.T, edits map[string]string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(fixture, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(fixture, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	for rel, content := range edits {
		p := filepath.Join(dst, filepath.FromSlash(rel))
		if content == "" {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func opts(repo, env string) Options {
	return Options{Repo: repo, Path: "clusters/" + env, Namespace: "flux-system", RootName: "flux-system"}
}

func find(t *testing.T, cs []verify.Check, id string) verify.Check {
	t.Helper()
	for _, c := range cs {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("no check %s in %+v", id, cs)
	return verify.Check{}
}

func TestBuildFixtureEnvironments(t *testing.T) {
	for env, url := range map[string]string{"dev": "https://git.dev.example.invalid/homelab/gitops.git", "prod": "https://gitea.prod.example.invalid/homelab/gitops.git"} {
		t.Run(env, func(t *testing.T) {
			r, err := Build(opts(fixture, env))
			if err != nil {
				t.Fatal(err)
			}
			if r.Root == nil || r.Root.Spec.Path != "./clusters/"+env || r.Root.Spec.Wait {
				t.Fatalf("root: %+v", r.Root)
			}
			if got := DeclaredOf(r.Source).URL; got != url {
				t.Errorf("declared url %s, want %s", got, url)
			}
			if len(r.Kustomizations) != 11 {
				t.Errorf("%d Kustomizations, want 11", len(r.Kustomizations))
			}
			for _, c := range Static(r) {
				if c.Verdict != verify.Pass {
					t.Errorf("%s: %s %s", c.ID, c.Verdict, c.Message)
				}
			}
			// cluster-vars is the environment's own.
			for _, o := range r.Objects {
				if o.GetKind() == "ConfigMap" && o.GetName() == "cluster-vars" {
					if v, _, _ := unstructured.NestedString(o.Object, "data", "environment"); v != env {
						t.Errorf("cluster-vars environment %q, want %s", v, env)
					}
				}
			}
		})
	}
}

func TestGateRootWaitTrue(t *testing.T) {
	sync, _ := os.ReadFile(filepath.Join(fixture, "clusters/prod/sync.yaml"))
	repo := copyFixture(t, map[string]string{"clusters/prod/sync.yaml": strings.Replace(string(sync), "  wait: false", "  wait: true", 1)})
	r, err := Build(opts(repo, "prod"))
	if err != nil {
		t.Fatal(err)
	}
	c := find(t, Static(r), GateRootWait.ID)
	if c.Verdict != verify.Fail || !strings.Contains(c.Message, "clusters/prod/sync.yaml") || !strings.Contains(c.Message, "set wait: false") {
		t.Fatalf("root wait: true: %s %s", c.Verdict, c.Message)
	}
}

func TestGateProdWithoutSyncYAML(t *testing.T) {
	kus, _ := os.ReadFile(filepath.Join(fixture, "clusters/prod/kustomization.yaml"))
	repo := copyFixture(t, map[string]string{
		"clusters/prod/sync.yaml":          "",
		"clusters/prod/kustomization.yaml": strings.Replace(string(kus), "  - sync.yaml\n", "", 1),
	})
	r, err := Build(opts(repo, "prod"))
	if err != nil {
		t.Fatal(err)
	}
	cs := Static(r)
	root := find(t, cs, GateRoot.ID)
	if root.Verdict != verify.Fail || !strings.Contains(root.Message, "sync.yaml") {
		t.Errorf("root gate: %s %s", root.Verdict, root.Message)
	}
	dep := find(t, cs, GateDependsOn.ID)
	if dep.Verdict != verify.Fail || !strings.Contains(dep.Message, "depends on flux-system/flux-system") ||
		!strings.Contains(dep.Message, "clusters/base/") || !strings.Contains(dep.Message, "sync.yaml") {
		t.Errorf("dependsOn gate: %s %s", dep.Verdict, dep.Message)
	}
	if len(dep.Evidence) != 3 { // cni, platform and monitoring-crds depend on the root
		t.Errorf("evidence %q, want the 3 Kustomizations that depend on the root", dep.Evidence)
	}
	if find(t, cs, GateRootWait.ID).Verdict != verify.Skip {
		t.Error("root-wait should skip without a root")
	}
}

func TestGateDependsOnMissingTarget(t *testing.T) {
	apps, _ := os.ReadFile(filepath.Join(fixture, "clusters/base/apps.yaml"))
	repo := copyFixture(t, map[string]string{"clusters/base/apps.yaml": strings.Replace(string(apps), "- name: apps-core", "- name: apps-kore", 1)})
	r, err := Build(opts(repo, "dev"))
	if err != nil {
		t.Fatal(err)
	}
	dep := find(t, Static(r), GateDependsOn.ID)
	// The target is not the root: the fix is the edge, not sync.yaml.
	if dep.Verdict != verify.Fail || !strings.Contains(dep.Message, "apps-web (in clusters/base/apps.yaml:22) depends on flux-system/apps-kore") ||
		!strings.Contains(dep.Message, "add the missing Kustomization or drop the edge") {
		t.Fatalf("dependsOn gate: %s %s", dep.Verdict, dep.Message)
	}
}

// TestGateDependsOnTargetBelowRoot: a dependsOn target that a
// Kustomization's path renders (not the root directory) exists once that
// Kustomization applied; only a target the environment renders nowhere is
// missing.
func TestGateDependsOnTargetBelowRoot(t *testing.T) {
	apps, _ := os.ReadFile(filepath.Join(fixture, "clusters/base/apps.yaml"))
	core, _ := os.ReadFile(filepath.Join(fixture, "apps/core/core.yaml"))
	extras := "---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps-core-extras\n  namespace: flux-system\n" +
		"spec:\n  interval: 10m\n  path: ./apps/web\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n"
	for _, tc := range []struct {
		name, target string
		pass         bool
	}{
		{"rendered by apps-core's path", "apps-core-extras", true},
		{"rendered nowhere", "apps-core-extraz", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := copyFixture(t, map[string]string{
				"apps/core/core.yaml":     string(core) + extras,
				"clusters/base/apps.yaml": strings.Replace(string(apps), "- name: apps-core", "- name: "+tc.target, 1),
			})
			r, err := Build(opts(repo, "dev"))
			if err != nil {
				t.Fatal(err)
			}
			dep := find(t, Static(r), GateDependsOn.ID)
			if got := dep.Verdict == verify.Pass; got != tc.pass || !tc.pass && !strings.Contains(dep.Message, "depends on flux-system/"+tc.target) {
				t.Fatalf("dependsOn gate: %s %s", dep.Verdict, dep.Message)
			}
		})
	}
}

func TestGateSourceMissing(t *testing.T) {
	sync, _ := os.ReadFile(filepath.Join(fixture, "clusters/dev/sync.yaml"))
	repo := copyFixture(t, map[string]string{"clusters/dev/sync.yaml": strings.Replace(string(sync), "    name: flux-system", "    name: gitops", 1)})
	r, err := Build(opts(repo, "dev"))
	if err != nil {
		t.Fatal(err)
	}
	c := find(t, Static(r), GateSource.ID)
	if c.Verdict != verify.Fail || !strings.Contains(c.Message, "GitRepository gitops") {
		t.Fatalf("source gate: %s %s", c.Verdict, c.Message)
	}
}

func TestBuildInputErrors(t *testing.T) {
	for name, o := range map[string]Options{
		"no such env":  opts(fixture, "staging"),
		"outside repo": {Repo: fixture, Path: "../..", Namespace: "flux-system", RootName: "flux-system"},
	} {
		if _, err := Build(o); err == nil || !verify.IsInput(err) {
			t.Errorf("%s: want an input error, got %v", name, err)
		}
	}
}

func TestGateDecryptionSecret(t *testing.T) {
	r, err := Build(opts(fixture, "dev"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	scheme, err := kube.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	empty := fake.NewClientBuilder().WithScheme(scheme).Build()
	c := find(t, DecryptionSecrets(ctx, empty, r), GateDecryption.ID+"/flux-system/sops-age")
	if c.Verdict != verify.Fail || !strings.Contains(c.Message, "bootstrap age-key --path clusters/dev") || !strings.Contains(c.Message, "apps-secrets") {
		t.Fatalf("missing sops-age: %s %s", c.Verdict, c.Message)
	}
	with := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "sops-age"}}).Build()
	if c := find(t, DecryptionSecrets(ctx, with, r), GateDecryption.ID+"/flux-system/sops-age"); c.Verdict != verify.Pass {
		t.Fatalf("present sops-age: %s %s", c.Verdict, c.Message)
	}
}

// TestGatePrerequisite: a substituteFrom Secret the environment does not
// render (testdata/layouts/operator: cluster-secrets, made at bootstrap)
// must exist, with the keys its readers use that nothing rendered defines
// (SECRET_DOMAIN); only key names are read and reported.
func TestGatePrerequisite(t *testing.T) {
	r, err := Build(Options{Repo: "../../testdata/layouts/operator", Path: "kubernetes/flux/cluster", Namespace: "flux-system", RootName: "flux-system"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	scheme, err := kube.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	id := GatePrerequisite.ID + "/Secret/default/cluster-secrets"
	empty := fake.NewClientBuilder().WithScheme(scheme).Build()
	if c := find(t, Prerequisites(ctx, empty, r), id); c.Verdict != verify.Fail ||
		!strings.Contains(c.Message, "Secret/default/cluster-secrets not found: it is made outside the repository and Kustomization(s) default/echo substitute from it") ||
		!strings.Contains(c.Message, "create it (keys SECRET_DOMAIN) before the sync") {
		t.Fatalf("missing: %s %s", c.Verdict, c.Message)
	}
	secret := func(data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cluster-secrets"}, Data: data}
	}
	lacks := fake.NewClientBuilder().WithScheme(scheme).WithObjects(secret(map[string][]byte{"OTHER": []byte("s3cr3t-value")})).Build()
	if c := find(t, Prerequisites(ctx, lacks, r), id); c.Verdict != verify.Fail || !strings.Contains(c.Message, "lacks key(s) SECRET_DOMAIN") || strings.Contains(c.Message, "s3cr3t") {
		t.Fatalf("without the key: %s %s", c.Verdict, c.Message)
	}
	with := fake.NewClientBuilder().WithScheme(scheme).WithObjects(secret(map[string][]byte{"SECRET_DOMAIN": []byte("example.invalid")})).Build()
	if c := find(t, Prerequisites(ctx, with, r), id); c.Verdict != verify.Pass || strings.Contains(c.Message, "example.invalid") {
		t.Fatalf("present: %s %s", c.Verdict, c.Message)
	}
	// The other one: read by cluster-apps, no key it must hold.
	if c := find(t, Prerequisites(ctx, with, r), GatePrerequisite.ID+"/Secret/flux-system/cluster-secrets"); c.Verdict != verify.Fail || !strings.Contains(c.Message, "create it (keys none)") {
		t.Fatalf("flux-system/cluster-secrets: %s %s", c.Verdict, c.Message)
	}
	// The homelab fixture renders every object it substitutes from.
	h, err := Build(opts(fixture, "dev"))
	if err != nil {
		t.Fatal(err)
	}
	if c := find(t, Prerequisites(ctx, empty, h), GatePrerequisite.ID); c.Verdict != verify.Pass {
		t.Fatalf("homelab: %s %s", c.Verdict, c.Message)
	}
}

// TestGateSOPSAgeFallback: a Kustomization decrypting with provider sops
// and no secretRef reads kustomize-controller's --sops-age-secret (v1.9.5
// internal/decryptor ImportKeys), taken from the live Deployment's args.
func TestGateSOPSAgeFallback(t *testing.T) {
	apps, _ := os.ReadFile(filepath.Join(fixture, "clusters/base/apps.yaml"))
	repo := copyFixture(t, map[string]string{"clusters/base/apps.yaml": strings.Replace(string(apps), "    provider: sops\n    secretRef:\n      name: sops-age\n", "    provider: sops\n", 1)})
	r, err := Build(opts(repo, "dev"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	scheme, err := kube.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	id := GateDecryption.ID + "/sops-age-secret"
	deploy := func(args ...string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "kustomize-controller"},
			Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Args: args}}}}}}
	}
	for _, tc := range []struct {
		name    string
		objs    []client.Object
		verdict verify.Verdict
		want    string
	}{
		{"no Deployment", nil, verify.Skip, "could not be read"},
		{"no flag", []client.Object{deploy("--watch-all-namespaces=true", "--log-level=info")}, verify.Fail, "runs without --sops-age-secret"},
		{"flag, no Secret", []client.Object{deploy("--log-level=info", "--sops-age-secret=global-age")}, verify.Fail, "Secret flux-system/global-age not found"},
		{"flag and Secret", []client.Object{deploy("--sops-age-secret=global-age"), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "global-age"}}}, verify.Pass, "kustomize-controller's --sops-age-secret) exists"},
	} {
		cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.objs...).Build()
		if c := find(t, DecryptionSecrets(ctx, cl, r), id); c.Verdict != tc.verdict || !strings.Contains(c.Message, tc.want) || !strings.Contains(c.Message, "apps-secrets") {
			t.Errorf("%s: %s %s", tc.name, c.Verdict, c.Message)
		}
	}
}

func TestOverrideRecordsProvenance(t *testing.T) {
	r, err := Build(opts(fixture, "prod"))
	if err != nil {
		t.Fatal(err)
	}
	since := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	src := r.Source.DeepCopy()
	if err := Override(src, &Temporary{URL: "http://mirror.example.invalid/gitops.git", Branch: "bringup", Since: since}); err != nil {
		t.Fatal(err)
	}
	if got := DeclaredOf(src); got.URL != "http://mirror.example.invalid/gitops.git" || got.Ref == nil || got.Ref.Branch != "bringup" {
		t.Errorf("overridden spec: %+v", got)
	}
	tmp, declared := TemporaryOf(src)
	if tmp == nil || tmp.URL != "http://mirror.example.invalid/gitops.git" || tmp.Branch != "bringup" || !tmp.Since.Equal(since) {
		t.Fatalf("temporary record: %+v", tmp)
	}
	if declared.URL != "https://gitea.prod.example.invalid/homelab/gitops.git" || declared.Ref == nil || declared.Ref.Branch != "main" {
		t.Errorf("declared record: %+v", declared)
	}
	if src.GetAnnotations()[ReconcileAnnotation] != ReconcileDisabled {
		t.Error("kustomize-controller's reconcile is not disabled on the temporary source")
	}
	if tmp, _ := TemporaryOf(r.Source); tmp != nil {
		t.Error("the render's own GitRepository reads as temporary")
	}
}

// TestBuildKeepsGoingPastABrokenChild: sync applies the root; a
// Kustomization below it whose path does not build does not stop it (the
// controller fails that one, and the offline check names it).
func TestBuildKeepsGoingPastABrokenChild(t *testing.T) {
	repo := copyFixture(t, map[string]string{"apps/web/kustomization.yaml": "resources:\n- missing.yaml\n"})
	r, err := Build(opts(repo, "dev"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Root == nil || r.Env.Err() == nil || !strings.Contains(r.Env.Err().Error(), "missing.yaml") {
		t.Fatalf("root %v, model error %v: want the root built and the broken child recorded", r.Root, r.Env.Err())
	}
}

// The serving process reads the temporary-source record by this name.
func TestTemporaryURLAnnotationShared(t *testing.T) {
	if AnnTemporaryURL != AnnotationPrefix+"temporary-url" {
		t.Fatalf("AnnTemporaryURL %q", AnnTemporaryURL)
	}
}

// A root with wait: true that nothing it health-checks depends on is no
// deadlock: kustomize-controller v1.9.5 (checkHealth) leaves the root out
// of its own health check. The rule is fluxgraph.RootWaiters, as check's.
func TestGateRootWaitTrueNothingDependsOnRoot(t *testing.T) {
	over := map[string]string{}
	sync, _ := os.ReadFile(filepath.Join(fixture, "clusters/prod/sync.yaml"))
	over["clusters/prod/sync.yaml"] = strings.Replace(string(sync), "  wait: false", "  wait: true", 1)
	for _, f := range []string{"platform.yaml", "monitoring.yaml", "infrastructure.yaml", "apps.yaml"} {
		b, _ := os.ReadFile(filepath.Join(fixture, "clusters/base", f))
		over["clusters/base/"+f] = strings.ReplaceAll(string(b), "    - name: flux-system\n", "")
	}
	r, err := Build(opts(copyFixture(t, over), "prod"))
	if err != nil {
		t.Fatal(err)
	}
	if c := find(t, Static(r), GateRootWait.ID); c.Verdict != verify.Pass || !strings.Contains(c.Message, "wait: true") {
		t.Fatalf("root wait: true, nothing depends on it: %s %s; want pass", c.Verdict, c.Message)
	}
}
