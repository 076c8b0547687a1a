//go:build e2e

package e2e

// OCI roots (issue 46 item 4) on the sandbox: our repository whose root
// reads an OCIRepository (testdata/layouts/oci-root), pushed as a Flux OCI
// artifact to the sandbox registry, brought up by `bootstrap sync` with the
// real source-controller pulling it and kustomize-controller applying it;
// the sync is proven at the digest the registry serves for the tag, again
// after a new push to the same tag; and a tag the registry does not hold
// fails sync.source-ready with source-controller's reason, well before the
// timeout.

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/cutover"
	"github.com/homelab-ops/bootstrap/internal/ociartifact"
	"github.com/homelab-ops/bootstrap/internal/rootsync"
	"github.com/homelab-ops/bootstrap/internal/serve"
)

func TestOCIRoot(t *testing.T) {
	ctx := timeoutCtx(t, 12*time.Minute)
	ensureFlux(t)
	reg := suite.registry
	if reg == nil {
		t.Fatal("the suite sandbox has no registry")
	}
	if err := reg.EnsureCASecret(ctx, suite.client, fluxNS, "registry-ca"); err != nil {
		t.Fatal(err)
	}
	artifact := freshRepoName("oci-root")
	fixture := filepath.Join(suite.root, "testdata", "layouts", "oci-root")
	dir := copyDir(t, fixture, nil)
	pointAtRegistry(t, dir, map[string]string{"oci://registry.example.invalid/fleet/oci-root": reg.ArtifactURL(artifact)})
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		for _, o := range []client.Object{
			&kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: fluxNS, Name: "oci-root-apps"}},
			&kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: fluxNS, Name: "oci-root"}},
			&sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: fluxNS, Name: "oci-root"}},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "oci-root-demo"}},
		} {
			_ = suite.client.Delete(cctx, o)
		}
	})
	sync := func(t *testing.T, repo string, timeout string) syncRun {
		t.Helper()
		return bootstrapJSON(t, "sync", "--repo", repo, "--env", "sandbox", "--root", "oci-root", "--timeout", timeout)
	}
	// proven: the sync passed, at rev, as the cluster says.
	proven := func(t *testing.T, r syncRun, rev string) {
		t.Helper()
		if r.code != 0 {
			t.Fatalf("sync:\n%s\nstderr:\n%s", r, r.stderr)
		}
		if got := r.report.check("sync.source-ready"); !strings.HasPrefix(got, "pass") || !strings.Contains(got, "artifact "+rev) || !strings.Contains(got, "the digest the registry serves for tag sandbox") {
			t.Errorf("sync.source-ready: %q, want pass at %s", got, rev)
		}
		if got := r.report.check("sync.root-applied"); !strings.HasPrefix(got, "pass") || !strings.Contains(got, "lastAppliedRevision "+rev) {
			t.Errorf("sync.root-applied: %q, want pass at %s", got, rev)
		}
		t.Logf("%s", r.report.check("sync.source-ready"))
		var o sourcev1.OCIRepository
		if err := suite.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: "oci-root"}, &o); err != nil {
			t.Fatal(err)
		}
		if o.Status.Artifact == nil || o.Status.Artifact.Revision != rev {
			t.Errorf("live OCIRepository artifact %v, want %s", o.Status.Artifact, rev)
		}
		var k kustomizev1.Kustomization
		if err := suite.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: "oci-root"}, &k); err != nil {
			t.Fatal(err)
		}
		if k.Status.LastAppliedRevision != rev {
			t.Errorf("live root lastAppliedRevision %s, want %s", k.Status.LastAppliedRevision, rev)
		}
	}
	greeting := func(t *testing.T) string {
		t.Helper()
		var cm corev1.ConfigMap
		waitFor(ctx, t, suite.client, &corev1.ConfigMapList{}, "oci-root-demo", "greeting", func(c *corev1.ConfigMap) (bool, string) {
			cm = *c
			return true, ""
		})
		return cm.Data["greeting"]
	}

	rev, err := reg.PushArtifact(ctx, dir, artifact, "sandbox", ociartifact.Meta{Source: "testdata/layouts/oci-root", Revision: "first"})
	if err != nil {
		t.Fatal(err)
	}
	current := rev // what the registry serves for the tag

	t.Run("SyncProvesTheRootAtTheDigest", func(t *testing.T) {
		r := sync(t, dir, "4m")
		proven(t, r, rev)
		if got := r.report.check("sync.source"); !strings.Contains(got, "OCIRepository flux-system/oci-root, url "+reg.ArtifactURL(artifact)) {
			t.Errorf("sync.source: %q", got)
		}
		if got := greeting(t); got != "hello from an OCI artifact" {
			t.Errorf("the child Kustomization applied greeting %q", got)
		}
	})

	t.Run("ANewPushIsProvenAtItsDigest", func(t *testing.T) {
		pointAtRegistry(t, dir, map[string]string{"hello from an OCI artifact": "hello again"})
		rev2, err := reg.PushArtifact(ctx, dir, artifact, "sandbox", ociartifact.Meta{Source: "testdata/layouts/oci-root", Revision: "second"})
		if err != nil {
			t.Fatal(err)
		}
		if rev2 == rev {
			t.Fatalf("the second push has the first's revision %s", rev)
		}
		proven(t, sync(t, dir, "4m"), rev2)
		current = rev2
	})

	t.Run("UpBringsItUp", func(t *testing.T) {
		r := bootstrapJSON(t, "up", "--repo", dir, "--env", "sandbox", "--root", "oci-root", "--timeout", "4m", "--fail-after", "90s")
		proven(t, r, current)
		for _, n := range []string{"flux-system/oci-root", "flux-system/oci-root-apps"} {
			if got := r.report.check("converge.node/" + n); !strings.HasPrefix(got, "pass") {
				t.Errorf("converge.node/%s: %q, want pass", n, got)
			}
		}
		st := bootstrapJSON(t, "status", "--repo", dir, "--env", "sandbox", "--root", "oci-root")
		if st.code != 0 {
			t.Errorf("status after up:\n%s\nstderr:\n%s", st, st.stderr)
		}
	})

	t.Run("AMissingTagFailsWithTheControllersReason", func(t *testing.T) {
		missing := copyDir(t, dir, nil)
		pointAtRegistry(t, missing, map[string]string{"tag: sandbox": "tag: never-pushed"})
		t0 := time.Now()
		r := sync(t, missing, "3m")
		took := time.Since(t0)
		got := r.report.check("sync.source-ready")
		if r.code == 0 || !strings.HasPrefix(got, "fail") || !strings.Contains(got, "source-controller failed it") || !strings.Contains(got, sourcev1.OCIPullFailedReason) || !strings.Contains(got, "never-pushed") {
			t.Fatalf("sync of a tag never pushed: exit %d, sync.source-ready %q; want a failure with source-controller's reason %s\n%s", r.code, got, sourcev1.OCIPullFailedReason, r)
		}
		if strings.Contains(got, "not ready in time") || took > 2*time.Minute {
			t.Errorf("the failure waited for the timeout (%s): %q", took.Round(time.Second), got)
		}
		if rc := r.report.check("sync.root-applied"); !strings.HasPrefix(rc, "skip") {
			t.Errorf("sync.root-applied: %q, want skip", rc)
		}
		t.Logf("failed in %s: %s", took.Round(time.Second), got)
	})
}

// TestOCIRootServed: an OCI root brought up from a served artifact on a
// fresh sandbox (issue 46 item 4b). `up --serve --dry-run` plans every
// phase, exit 0; `up --serve --cutover-when-ready` serves the checkout's
// HEAD as a Flux OCI artifact, the root is Ready at the served digest, then
// (the test having pushed the artifact to the declared registry, the
// sandbox's) the cutover moves the OCIRepository to the declared URL and
// ref, Ready at the digest that registry serves, the serve Secret is
// deleted, and the serving process stops by itself.
func TestOCIRootServed(t *testing.T) {
	ctx := timeoutCtx(t, 15*time.Minute)
	e, err := startEnv(ctx, suite.envConfig, "ociserve", t.TempDir(), envOptions{runner: true, registry: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.teardown()
	g := &gEnv{env: e}
	c := serveCLI{t: t, g: g, stateDir: t.TempDir()}
	defer c.stop()
	artifact := freshRepoName("oci-served")
	declaredURL := e.registry.ArtifactURL(artifact)
	dir := copyDir(t, filepath.Join(suite.root, "testdata", "layouts", "oci-root"), nil)
	pointAtRegistry(t, dir, map[string]string{"oci://registry.example.invalid/fleet/oci-root": declaredURL})
	git(t, dir, "init", "--quiet", "--initial-branch=main")
	git(t, dir, "add", "--all")
	git(t, dir, "commit", "--quiet", "-m", "oci root")
	up := []string{"up", "--repo", dir, "--env", "sandbox", "--root", "oci-root", "--timeout", "4m"}

	t.Run("DryRunOnTheFreshCluster", func(t *testing.T) {
		r := c.run("", append(append([]string{}, up...), "--serve", "--dry-run")...)
		if r.code != 0 {
			t.Fatalf("up --serve --dry-run of an OCI root on a fresh cluster: exit %d\n%s\n%s", r.code, r, r.stderr)
		}
		if got := r.report.check("sync.temporary-source"); !strings.Contains(got, "on the artifact this machine serves") || !strings.Contains(got, "tag sandbox") {
			t.Errorf("sync.temporary-source: %q", got)
		}
		var ns corev1.Namespace
		if err := e.client.Get(ctx, client.ObjectKey{Name: fluxNS}, &ns); err == nil {
			t.Fatalf("the dry run created namespace %s", fluxNS)
		}
		if code, s := c.status(); code == 0 && s.Running {
			t.Fatalf("the dry run left a serving process: %+v", s.State)
		}
	})

	// The declared registry: its CA where the OCIRepository's certSecretRef
	// names it, and the artifact pushed (the in-cluster registry a real
	// bring-up fills once it runs).
	if err := e.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fluxNS}}); err != nil {
		t.Fatal(err)
	}
	if err := e.registry.EnsureCASecret(ctx, e.client, fluxNS, "registry-ca"); err != nil {
		t.Fatal(err)
	}
	t.Run("CutoverWaitsForTheDeclaredArtifact", func(t *testing.T) {
		// Nothing pushed to the declared registry yet: the probe fails
		// with source-controller's reason, the cluster stays on the served
		// artifact (still served), the probe is deleted.
		r := c.run("", append(append([]string{}, up...), "--serve", "--cutover-when-ready", "--cutover-timeout", "1m")...)
		reach := r.report.check(cutover.GateFinalReachable.ID)
		if r.code != 1 || !strings.HasPrefix(reach, "fail") || !strings.Contains(reach, declaredURL) || !strings.Contains(reach, "source-controller failed it") {
			t.Fatalf("--cutover-when-ready with no artifact in the declared registry: want exit 1 with the probe's failure:\n%s\n%s", r, r.stderr)
		}
		t.Logf("%s", reach)
		var o sourcev1.OCIRepository
		if err := e.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: "oci-root"}, &o); err != nil {
			t.Fatal(err)
		}
		if o.Spec.URL != r.facts["serveURL"] || o.Annotations[rootsync.AnnSource] != rootsync.SourceTemporary || o.Status.Artifact == nil || o.Status.Artifact.Revision != r.facts["serveRevision"] {
			t.Errorf("after the failed cutover: url %s (served %s) annotations %v artifact %v", o.Spec.URL, r.facts["serveURL"], o.Annotations, o.Status.Artifact)
		}
		if err := e.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: "oci-root" + cutover.ProbeSuffix}, &sourcev1.OCIRepository{}); err == nil {
			t.Errorf("the probe OCIRepository is left")
		}
		if code, s := c.status(); code != 0 || !s.Running {
			t.Errorf("the served artifact is not served any more: exit %d %+v", code, s)
		}
	})

	pushed, err := e.registry.PushArtifact(ctx, dir, artifact, "sandbox", ociartifact.Meta{Source: "testdata/layouts/oci-root", Revision: "pushed"})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("ServedThenCutOver", func(t *testing.T) {
		r := c.run("", append(append([]string{}, up...), "--serve", "--cutover-when-ready", "--cutover-timeout", "2m")...)
		served := r.facts["serveRevision"]
		if r.code != 0 || !strings.HasPrefix(served, "sandbox@sha256:") {
			t.Fatalf("up --serve --cutover-when-ready of an OCI root: exit %d, served %q\n%s\n%s", r.code, served, r, r.stderr)
		}
		if served == pushed {
			t.Fatalf("the served artifact is the pushed one (%s): the test would not tell them apart", pushed)
		}
		for id, want := range map[string]string{
			"sync.source-ready":           "artifact " + served,
			"sync.root-applied":           "lastAppliedRevision " + served,
			cutover.GateFinalReachable.ID: pushed,
			cutover.GateFinalReady.ID:     "artifact " + pushed,
			cutover.GateHandedBack.ID:     "deleted",
			cutover.GateConsumersReady.ID: pushed,
		} {
			if got := r.report.check(id); !strings.HasPrefix(got, "pass") || !strings.Contains(got, want) {
				t.Errorf("%s: %q, want pass naming %q", id, got, want)
			}
		}
		// pass: it ended by itself (seen stopping, or already gone when
		// looked at); warn would say the cutover had to stop it.
		if got := r.report.check(cutover.GateServeStopped.ID); !strings.HasPrefix(got, "pass") {
			t.Errorf("%s: %q, want pass", cutover.GateServeStopped.ID, got)
		}
		t.Logf("served %s, cut over to %s; %s", served, pushed, r.report.check(cutover.GateServeStopped.ID))
		var o sourcev1.OCIRepository
		if err := e.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: "oci-root"}, &o); err != nil {
			t.Fatal(err)
		}
		if o.Spec.URL != declaredURL || o.Spec.Reference == nil || o.Spec.Reference.Tag != "sandbox" || o.Spec.SecretRef != nil ||
			o.Spec.CertSecretRef == nil || o.Spec.CertSecretRef.Name != "registry-ca" || o.Annotations[rootsync.AnnSource] != "" ||
			o.Status.Artifact == nil || o.Status.Artifact.Revision != pushed {
			t.Errorf("after the cutover: spec %+v annotations %v artifact %v", o.Spec, o.Annotations, o.Status.Artifact)
		}
		var k kustomizev1.Kustomization
		if err := e.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: "oci-root"}, &k); err != nil || k.Status.LastAppliedRevision != pushed {
			t.Errorf("root lastAppliedRevision %q (%v), want %s", k.Status.LastAppliedRevision, err, pushed)
		}
		if err := e.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: serve.SecretName}, &corev1.Secret{}); err == nil {
			t.Errorf("the serve Secret %s is left", serve.SecretName)
		}
		if err := e.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: "oci-root" + cutover.ProbeSuffix}, &sourcev1.OCIRepository{}); err == nil {
			t.Errorf("the probe OCIRepository is left")
		}
		if code, s := c.status(); code == 0 && s.Running {
			t.Errorf("the serving process still runs: %+v", s.State)
		}
		if pid := r.facts["servePID"]; pid != "" {
			if _, err := os.Stat("/proc/" + pid); err == nil {
				t.Errorf("the serving process %s still runs", pid)
			}
		}
	})
}
