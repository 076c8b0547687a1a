package serve

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

func TestOCITagOf(t *testing.T) {
	for _, tt := range []struct {
		name string
		ref  *sourcev1.OCIRepositoryRef
		want string
	}{
		{"none", nil, "latest"},
		{"empty", &sourcev1.OCIRepositoryRef{}, "latest"},
		{"tag", &sourcev1.OCIRepositoryRef{Tag: "sandbox"}, "sandbox"},
		{"semver", &sourcev1.OCIRepositoryRef{SemVer: ">=1.0.0", Tag: "x"}, OCIServedTag},
		{"digest", &sourcev1.OCIRepositoryRef{Digest: "sha256:" + strings.Repeat("a", 64), Tag: "x"}, OCIServedTag},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got, why := OCITagOf(tt.ref); got != tt.want || why == "" {
				t.Fatalf("OCITagOf = %q (%q), want %q", got, why, tt.want)
			}
		})
	}
}

// TestOCIServeProcess: an OCI root served from a checkout on any branch
// (nothing in git names one): the serving process builds the artifact the
// parent proved, from the HEAD commit's files, and Start's probe pulls it
// over TLS with the token at that revision; a dirty tree is refused.
func TestOCIServeProcess(t *testing.T) {
	needGit(t)
	t.Setenv(childEnv, "1")
	repo := checkout(t)
	run(t, repo, nil, "switch", "--quiet", "-c", "feature")
	o := Options{
		Addr: "127.0.0.1", For: time.Hour, Repo: repo, Namespace: "flux-system", Name: "oci-root",
		OCI:       &OCIOptions{Tag: "sandbox", Why: "the declared tag sandbox"},
		APIServer: "https://127.0.0.1:1", Kube: Kube{Host: "https://127.0.0.1:1"}, Dirs: Dirs{Root: t.TempDir()},
		Command: []string{os.Args[0], "-test.run=^$"},
	}
	p, err := Prepare(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	head := run(t, repo, nil, "rev-parse", "HEAD")
	if p.Snapshot.Commit != head || !strings.HasPrefix(p.Snapshot.Revision(), "sandbox@sha256:") || !strings.HasPrefix(p.URL, "oci://127.0.0.1:") {
		t.Fatalf("prepared %s at %s, revision %s (HEAD %s)", p.URL, p.Snapshot.Commit, p.Snapshot.Revision(), head)
	}
	if b, err := os.ReadFile(filepath.Join(treeDir(filepath.Dir(p.Snapshot.Bare)), "a.yaml")); err != nil || string(b) != "a: 1\n" {
		t.Fatalf("tree a.yaml %q %v", b, err)
	}
	sec, err := p.Secret()
	if err != nil || sec.Object["type"] != "kubernetes.io/dockerconfigjson" {
		t.Fatalf("secret %v %v", sec, err)
	}
	st, err := p.Start(context.Background())
	if err != nil {
		t.Fatal(err) // Start probes the served artifact at the revision
	}
	t.Cleanup(func() { _, _ = Stop(p.Dir, 5*time.Second) })
	if st.Kind != sourcev1.OCIRepositoryKind || st.Revision != p.Snapshot.Revision() {
		t.Fatalf("state %+v", st)
	}
	if err := ProbeOCI(context.Background(), "https://"+st.Listen, &Credentials{CAPEM: p.creds.CAPEM, Token: "wrong"}, st.Revision); err == nil {
		t.Fatal("a wrong token pulled the artifact")
	}
	if _, err := Stop(p.Dir, 5*time.Second); err != nil {
		t.Fatal(err)
	}

	// A dirty tree is refused, as for Git.
	if err := os.WriteFile(filepath.Join(repo, "a.yaml"), []byte("a: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o.Dirs = Dirs{Root: t.TempDir()}
	if q, err := Prepare(context.Background(), o); err == nil || !verify.IsInput(err) || !strings.Contains(err.Error(), "not committed") {
		if q != nil {
			q.Close()
		}
		t.Fatalf("dirty tree: %v", err)
	}
}
