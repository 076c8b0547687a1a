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
	"path/filepath"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/ociartifact"
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

	t.Run("ServeIsRefusedBeforeTheFirstRequest", func(t *testing.T) {
		// --serve serves Git; an OCI root reads a registry (item 4b, not built).
		r := bootstrapJSON(t, "sync", "--repo", dir, "--env", "sandbox", "--root", "oci-root", "--serve", "--dry-run")
		if r.code == 0 || len(r.report.Objects) > 0 || !strings.Contains(r.report.Error+r.stderr, "OCIRepository flux-system/oci-root") {
			t.Fatalf("sync --serve of an OCI root: want refused naming the OCIRepository, nothing planned\n%s\nstderr:\n%s", r, r.stderr)
		}
		t.Logf("refused: %s", strings.TrimSpace(r.report.Error))
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
