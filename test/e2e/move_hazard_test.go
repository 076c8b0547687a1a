//go:build e2e

package e2e

// The move hazard `bootstrap diff` names (internal/diff Move) against the
// sandbox's kustomize-controller: an object leaving Kustomization echo's
// path for cluster-apps' is deleted by echo's garbage collection when echo
// reconciles first, and created anew by cluster-apps (another UID); when
// cluster-apps reconciles first it takes the object over and echo's
// collection skips it (the same UID). The order is forced by suspending
// the one that must wait.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestMoveHazard(t *testing.T) {
	ctx := timeoutCtx(t, 15*time.Minute)
	ensureFlux(t)
	cm := func(name string) string {
		return "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  kept: \"yes\"\n"
	}
	echoApp := func(names ...string) string {
		s := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ./configmap.yaml\n"
		for _, n := range names {
			s += "  - ./" + n + ".yaml\n"
		}
		return s
	}
	appsKs := func(names ...string) string {
		s := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ./namespace.yaml\n  - ./echo/ks.yaml\n"
		for _, n := range names {
			s += "  - ./" + n + ".yaml\n"
		}
		return s
	}
	inNS := func(name string) string {
		return strings.Replace(cm(name), "  name: "+name+"\n", "  name: "+name+"\n  namespace: "+taskfileNS+"\n", 1)
	}
	repo, key, _, _ := taskfileRepo(ctx, t, map[string]string{
		"kubernetes/apps/default/echo/app/moved-a.yaml":       cm("moved-a"),
		"kubernetes/apps/default/echo/app/moved-b.yaml":       cm("moved-b"),
		"kubernetes/apps/default/echo/app/kustomization.yaml": echoApp("moved-a", "moved-b"),
	})
	if up := bootstrapJSONIn(t, key, taskfileUp(repo)...); up.code != 0 {
		t.Fatalf("up: %s", up)
	}
	uid := func(name string) (types.UID, string, error) {
		var c corev1.ConfigMap
		err := suite.client.Get(ctx, client.ObjectKey{Namespace: taskfileNS, Name: name}, &c)
		return c.UID, c.Labels["kustomize.toolkit.fluxcd.io/name"], err
	}
	suspend := func(name string, on bool) {
		k := &kustomizev1.Kustomization{}
		k.Namespace, k.Name = fluxNS, name
		patch := fmt.Sprintf(`{"spec":{"suspend":%t}}`, on)
		if err := suite.client.Patch(ctx, k, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			t.Fatalf("suspend %s %t: %v", name, on, err)
		}
	}
	// commit pushes files, the source fetches it, and name (not
	// suspended) applies it; it returns the revision.
	commit := func(files map[string]string, name string) string {
		sha, err := lastTaskfileRepo.Commit(ctx, "", files, "move")
		if err != nil {
			t.Fatal(err)
		}
		rev := lastTaskfileRepo.Revision(sha)
		gr := &sourcev1.GitRepository{}
		gr.Namespace, gr.Name = fluxNS, "home-kubernetes"
		requestReconcile(ctx, t, gr)
		applied(ctx, t, name, rev)
		return rev
	}

	// The diff of the move names the hazard.
	diffOf := func(files map[string]string) string {
		for f, c := range files {
			write(t, repo, f, c)
		}
		var out bytes.Buffer
		cmd := exec.Command(bootstrapCLI(t), "diff", "--repo", repo, "--base", "HEAD")
		cmd.Stdout, cmd.Stderr = &out, &out
		_ = cmd.Run()
		return out.String()
	}
	gitCommit(t, repo)

	t.Run("echo first: deleted, then created anew", func(t *testing.T) {
		before, _, err := uid("moved-a")
		if err != nil {
			t.Fatal(err)
		}
		files := map[string]string{
			"kubernetes/apps/default/echo/app/kustomization.yaml": echoApp("moved-b"),
			"kubernetes/apps/default/moved-a.yaml":                inNS("moved-a"),
			"kubernetes/apps/default/kustomization.yaml":          appsKs("moved-a"),
		}
		if d := diffOf(files); !strings.Contains(d, "MOVE ConfigMap "+taskfileNS+"/moved-a moves from Kustomization flux-system/echo to flux-system/cluster-apps") {
			t.Errorf("diff of the move: want its MOVE step in:\n%s", d)
		}
		gitCommit(t, repo)
		suspend("cluster-apps", true)
		rev := commit(files, "echo")
		if _, _, err := uid("moved-a"); !apierrors.IsNotFound(err) {
			t.Errorf("after echo applied %s first: moved-a %v, want deleted by its garbage collection", rev, err)
		}
		suspend("cluster-apps", false)
		applied(ctx, t, "cluster-apps", rev)
		after, owner, err := uid("moved-a")
		if err != nil || after == before || owner != "cluster-apps" {
			t.Errorf("after cluster-apps applied: moved-a uid %s (was %s), owner %q, %v: want created anew by cluster-apps", after, before, owner, err)
		}
	})
	t.Run("cluster-apps first: taken over, kept", func(t *testing.T) {
		before, _, err := uid("moved-b")
		if err != nil {
			t.Fatal(err)
		}
		files := map[string]string{
			"kubernetes/apps/default/echo/app/kustomization.yaml": echoApp(),
			"kubernetes/apps/default/moved-b.yaml":                inNS("moved-b"),
			"kubernetes/apps/default/kustomization.yaml":          appsKs("moved-a", "moved-b"),
		}
		suspend("echo", true)
		rev := commit(files, "cluster-apps")
		if after, owner, err := uid("moved-b"); err != nil || after != before || owner != "cluster-apps" {
			t.Errorf("after cluster-apps applied %s first: moved-b uid %s (was %s), owner %q, %v: want taken over", rev, after, before, owner, err)
		}
		suspend("echo", false)
		applied(ctx, t, "echo", rev)
		if after, owner, err := uid("moved-b"); err != nil || after != before || owner != "cluster-apps" {
			t.Errorf("after echo applied %s: moved-b uid %s (was %s), owner %q, %v: want kept (echo's collection skips it)", rev, after, before, owner, err)
		}
	})
}

// applied waits until Kustomization name (in flux-system) is Ready at rev,
// asking for a reconcile first.
func applied(ctx context.Context, t *testing.T, name, rev string) {
	t.Helper()
	k := &kustomizev1.Kustomization{}
	k.Namespace, k.Name = fluxNS, name
	requestReconcile(ctx, t, k)
	waitFor(ctx, t, suite.client, &kustomizev1.KustomizationList{}, fluxNS, name, func(k *kustomizev1.Kustomization) (bool, string) {
		st, reason, msg, current := readyStatus(k.Generation, k.Status.Conditions)
		return st == "True" && current && k.Status.LastAppliedRevision == rev, string(st) + " " + reason + ": " + msg + " at " + k.Status.LastAppliedRevision
	})
}

// write writes one file of dir.
func write(t *testing.T, dir, file, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(file))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// gitCommit commits dir's work tree (a repository made on the first call).
func gitCommit(t *testing.T, dir string) {
	t.Helper()
	run := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=e2e", "GIT_AUTHOR_EMAIL=e2e@example.invalid", "GIT_COMMITTER_NAME=e2e", "GIT_COMMITTER_EMAIL=e2e@example.invalid")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		run("init", "-q", "-b", "main")
	}
	run("add", "-A")
	run("commit", "-q", "--allow-empty", "-m", "e2e")
}
