package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	helmreg "helm.sh/helm/v4/pkg/registry"
	repo "helm.sh/helm/v4/pkg/repo/v1"
	"sigs.k8s.io/yaml"

	"github.com/homelab-ops/bootstrap/internal/sandbox"
)

func start(t *testing.T) *Registry {
	t.Helper()
	pki, err := sandbox.GeneratePKI(filepath.Join(t.TempDir(), "pki"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Start(pki, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func chartDir(name string) string { return filepath.Join("..", "..", "..", "testdata", "charts", name) }

// A pushed chart is pulled back by Helm's own client over TLS trusting only
// the sandbox CA, and listed in the Helm repository's index at a URL that
// serves the same bytes.
func TestPushChartServesOCIAndHelmRepository(t *testing.T) {
	r := start(t)
	ctx := context.Background()
	url, digest, err := r.PushChart(ctx, chartDir("cni"), "1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	if url != "oci://"+r.Host()+"/charts/cni" || !strings.HasPrefix(digest, "sha256:") {
		t.Fatalf("pushed to %s digest %s", url, digest)
	}
	hc, err := helmreg.NewClient(helmreg.ClientOptHTTPClient(r.client), helmreg.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "c.json")))
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := hc.Pull(strings.TrimPrefix(url, "oci://") + ":1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	if pulled.Manifest.Digest != digest {
		t.Errorf("pulled manifest %s, pushed %s", pulled.Manifest.Digest, digest)
	}
	ch, err := loader.LoadArchive(strings.NewReader(string(pulled.Chart.Data)))
	if err != nil {
		t.Fatal(err)
	}
	if ch.Metadata.Name != "cni" || ch.Metadata.Version != "1.2.3" {
		t.Fatalf("pulled %s %s", ch.Metadata.Name, ch.Metadata.Version)
	}

	get := func(u string) []byte {
		t.Helper()
		resp, err := r.client.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", u, resp.Status)
		}
		return b
	}
	idx := &repo.IndexFile{}
	if err := yaml.Unmarshal(get(r.HelmRepoURL()+"index.yaml"), idx); err != nil {
		t.Fatal(err)
	}
	cv, err := idx.Get("cni", "1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	data := get(cv.URLs[0])
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != cv.Digest {
		t.Errorf("index digest %s, served chart %x", cv.Digest, sum)
	}

	// Pushing the same version again replaces the index entry, not duplicates it.
	if _, _, err := r.PushChart(ctx, chartDir("cni"), "1.2.3"); err != nil {
		t.Fatal(err)
	}
	if n := len(r.index.Entries["cni"]); n != 1 {
		t.Errorf("index holds %d entries for cni 1.2.3", n)
	}
}

func TestRegistryRefusesWhatItShould(t *testing.T) {
	r := start(t)
	if _, _, err := r.PushChart(context.Background(), filepath.Join(t.TempDir(), "none"), "1.0.0"); err == nil || !strings.Contains(err.Error(), "load chart") {
		t.Errorf("missing chart: %v", err)
	}
	if _, _, err := r.PushChart(context.Background(), chartDir("cni"), "not-semver"); err == nil {
		t.Error("a version that is not SemVer was pushed")
	}
	// A client that does not trust the sandbox CA is refused.
	if _, err := http.Get(r.HelmRepoURL() + "index.yaml"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("untrusted client: %v", err)
	}
	if _, err := Start(nil, t.TempDir()); err == nil {
		t.Error("Start without a PKI")
	}
	if s := r.CASecret("ns", "ca"); string(s.Data["ca.crt"]) != string(r.CA()) || s.Namespace != "ns" {
		t.Errorf("CASecret: %+v", s)
	}
}
