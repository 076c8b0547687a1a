package serve

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/cli/cli/config/configfile"
	"github.com/docker/cli/cli/config/credentials"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/homelab-ops/bootstrap/internal/ociartifact"
)

// TestOCIHandler: the served artifact is pulled with the token at the
// revision OCIHandler returned; without it, with a wrong one, a push, and
// another repository are refused.
func TestOCIHandler(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "clusters/dev"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "clusters/dev/kustomization.yaml"), []byte("resources: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h, rev, err := OCIHandler(dir, "main", "t0ken", ociartifact.Meta{Revision: "main@sha1:abc"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	tag, err := name.NewTag(OCIRef(host)+":main", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	good := remote.WithAuth(&authn.Basic{Username: Username, Password: "t0ken"})
	desc, err := remote.Head(tag, remote.WithContext(ctx), good)
	if err != nil {
		t.Fatal(err)
	}
	if want := "main@" + desc.Digest.String(); rev != want {
		t.Fatalf("OCIHandler revision %s, served %s", rev, want)
	}
	img, err := remote.Image(tag, remote.WithContext(ctx), good)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := img.Manifest(); err != nil || len(m.Layers) != 1 || m.Layers[0].MediaType != ociartifact.ContentMediaType {
		t.Fatalf("manifest %+v, %v: want one Flux content layer", m, err)
	}
	for name, opt := range map[string]remote.Option{"no token": remote.WithAuth(authn.Anonymous), "wrong token": remote.WithAuth(&authn.Basic{Username: Username, Password: "guess"})} {
		if _, err := remote.Head(tag, remote.WithContext(ctx), opt); err == nil || !strings.Contains(err.Error(), "401") {
			t.Errorf("%s: %v, want 401", name, err)
		}
	}
	other, _ := name.NewTag(host+"/other:main", name.Insecure)
	if _, err := remote.Head(other, remote.WithContext(ctx), good); err == nil {
		t.Error("another repository was served")
	}
	junk, _ := random.Image(16, 1)
	if err := remote.Write(tag, junk, remote.WithContext(ctx), good); err == nil {
		t.Error("a push was accepted")
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, srv.URL+"/v2/"+RepoName+"/manifests/main", nil)
	req.SetBasicAuth(Username, "t0ken")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("DELETE: %v %v, want 405", resp, err)
	}
}

// TestOCISecret: the one Secret is a docker config whose entry for the
// served host is the token (docker's own file store finds it) and carries
// the run's CA.
func TestOCISecret(t *testing.T) {
	c := &Credentials{CAPEM: []byte("-----BEGIN CERTIFICATE-----\n"), Token: "t0ken"}
	u, err := c.OCISecret("flux-system", "10.0.0.5:8443")
	if err != nil {
		t.Fatal(err)
	}
	var s corev1.Secret
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &s); err != nil {
		t.Fatal(err)
	}
	if s.Type != corev1.SecretTypeDockerConfigJson || s.Name != SecretName || s.Labels[SecretLabel] != "serve" || string(s.Data["ca.crt"]) != string(c.CAPEM) {
		t.Fatalf("secret %+v", s)
	}
	cf := configfile.New("")
	if err := cf.LoadFromReader(bytes.NewReader(s.Data[corev1.DockerConfigJsonKey])); err != nil {
		t.Fatal(err)
	}
	ac, err := credentials.NewFileStore(cf).Get("10.0.0.5:8443")
	if err != nil || ac.Username != Username || ac.Password != "t0ken" {
		t.Fatalf("docker config entry %+v, %v", ac, err)
	}
}
