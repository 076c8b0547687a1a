package ociartifact

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/tar"
	"github.com/google/go-containerregistry/pkg/name"
	ggcr "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// TestPush pushes a directory to a real registry (go-containerregistry's)
// and reads it back as source-controller does: the Flux media types, the
// annotations, the revision `<tag>@<digest>`, the layer a tarball that
// untars to the directory's files less .git.
func TestPush(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := httptest.NewServer(ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	dir := t.TempDir()
	for p, c := range map[string]string{"clusters/dev/kustomization.yaml": "resources: []\n", ".git/HEAD": "ref: refs/heads/main\n", "logo.png": "x"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rev, err := Push(ctx, dir, host+"/fleet/app:dev", Meta{Source: "https://git.example/fleet", Revision: "main@sha1:abc"})
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := name.ParseReference(host+"/fleet/app:dev", name.Insecure)
	img, err := remote.Image(ref, remote.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	if rev != "dev@"+d.String() {
		t.Fatalf("revision %s, want dev@%s", rev, d)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != ConfigMediaType || len(m.Layers) != 1 || m.Layers[0].MediaType != ContentMediaType {
		t.Fatalf("manifest %+v: want an OCI manifest, Flux's config and one Flux content layer", m)
	}
	if m.Annotations[SourceAnnotation] != "https://git.example/fleet" || m.Annotations[RevisionAnnotation] != "main@sha1:abc" || m.Annotations[CreatedAnnotation] == "" {
		t.Fatalf("annotations %v", m.Annotations)
	}
	layers, _ := img.Layers()
	rc, err := layers[0].Compressed()
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := tar.Untar(rc, out); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(out, "clusters/dev/kustomization.yaml")); err != nil || string(b) != "resources: []\n" {
		t.Fatalf("untarred kustomization.yaml: %q, %v", b, err)
	}
	for _, left := range []string{".git/HEAD", "logo.png"} {
		if _, err := os.Stat(filepath.Join(out, left)); !os.IsNotExist(err) {
			t.Errorf("%s is in the artifact; flux push artifact leaves it out", left)
		}
	}
	if _, err := Push(ctx, filepath.Join(dir, "absent"), host+"/fleet/app:dev", Meta{}); err == nil {
		t.Fatal("pushed a directory that does not exist")
	}
}
