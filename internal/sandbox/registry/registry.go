// Package registry is the sandbox's chart host: an OCI registry
// (go-containerregistry's) and a Helm chart repository (an index.yaml Helm's
// own repo package writes) behind one TLS listener on loopback, its
// certificate issued by the sandbox CA. Charts are packaged by Helm's chart
// loader and pushed by Helm's registry client: what source-controller pulls
// here is what `helm package` and `helm push` would have made.
package registry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	ggcr "github.com/google/go-containerregistry/pkg/registry"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	helmreg "helm.sh/helm/v4/pkg/registry"
	repo "helm.sh/helm/v4/pkg/repo/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/homelab-ops/bootstrap/internal/sandbox"
)

// helmPath is where the Helm chart repository is served.
const helmPath = "/helm/"

// Registry serves charts over TLS. Create with Start, stop with Close.
type Registry struct {
	host   string
	ca     []byte
	dir    string
	srv    *http.Server
	client *http.Client

	mu     sync.Mutex
	index  *repo.IndexFile
	charts map[string][]byte // file name → packaged chart
}

// Start listens on a free loopback port with a certificate from pki's CA
// and serves until Close. dir receives the packaged charts and Helm's
// registry-client state (never the user's ~/.config/helm).
func Start(pki *sandbox.PKI, dir string) (*Registry, error) {
	if pki == nil || dir == "" {
		return nil, errors.New("registry: a PKI and a directory are required")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	certFile, keyFile, err := pki.IssueServing("registry")
	if err != nil {
		return nil, err
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	ca, err := os.ReadFile(pki.CACert)
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("registry: %s holds no certificate", pki.CACert)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	r := &Registry{
		host: ln.Addr().String(), ca: ca, dir: dir,
		index: repo.NewIndexFile(), charts: map[string][]byte{},
		client: &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}},
	}
	mux := http.NewServeMux()
	mux.Handle("/v2/", ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0))))
	mux.HandleFunc(helmPath, r.serveHelm)
	r.srv = &http.Server{
		Handler:           mux,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	go func() { _ = r.srv.ServeTLS(ln, "", "") }()
	return r, nil
}

// Host is the registry's host:port, as an oci:// URL names it.
func (r *Registry) Host() string { return r.host }

// ChartURL is the OCI repository a chart named name is pushed to.
func (r *Registry) ChartURL(name string) string { return "oci://" + r.host + "/charts/" + name }

// HelmRepoURL is the Helm chart repository's URL (its index.yaml is beneath).
func (r *Registry) HelmRepoURL() string { return "https://" + r.host + helmPath }

// CA is the PEM certificate that signed the registry's: a source's
// certSecretRef needs it as ca.crt.
func (r *Registry) CA() []byte { return bytes.Clone(r.ca) }

// Close stops serving.
func (r *Registry) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return r.srv.Shutdown(ctx)
}

// PushChart packages the chart in chartDir at version with Helm's chart
// library, pushes it to ChartURL(name) with Helm's registry client and adds
// it to the Helm repository's index. It returns the OCI URL and the
// manifest digest source-controller will report.
func (r *Registry) PushChart(ctx context.Context, chartDir, version string) (ociURL, digest string, err error) {
	ch, err := loader.LoadDir(chartDir)
	if err != nil {
		return "", "", fmt.Errorf("registry: load chart %s: %w", chartDir, err)
	}
	if version != "" {
		ch.Metadata.Version = version
	}
	if err := ch.Validate(); err != nil {
		return "", "", fmt.Errorf("registry: chart %s: %w", chartDir, err)
	}
	pkgDir, err := os.MkdirTemp(r.dir, "package-")
	if err != nil {
		return "", "", fmt.Errorf("registry: %w", err)
	}
	defer os.RemoveAll(pkgDir)
	path, err := chartutil.Save(ch, pkgDir)
	if err != nil {
		return "", "", fmt.Errorf("registry: package %s: %w", chartDir, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", "", fmt.Errorf("registry: %w", err)
	}
	hc, err := helmreg.NewClient(
		helmreg.ClientOptHTTPClient(r.client),
		helmreg.ClientOptCredentialsFile(filepath.Join(r.dir, "registry-config.json")),
	)
	if err != nil {
		return "", "", fmt.Errorf("registry: helm registry client: %w", err)
	}
	ociURL = r.ChartURL(ch.Metadata.Name)
	ref := strings.TrimPrefix(ociURL, "oci://") + ":" + ch.Metadata.Version
	if err := ctx.Err(); err != nil {
		return "", "", err
	}
	res, err := hc.Push(data, ref)
	if err != nil {
		return "", "", fmt.Errorf("registry: push %s: %w", ref, err)
	}
	sum := sha256.Sum256(data)
	file := filepath.Base(path)
	r.mu.Lock()
	defer r.mu.Unlock()
	if entries := r.index.Entries[ch.Metadata.Name]; entries != nil {
		kept := entries[:0]
		for _, e := range entries {
			if e.Version != ch.Metadata.Version {
				kept = append(kept, e)
			}
		}
		r.index.Entries[ch.Metadata.Name] = kept
	}
	if err := r.index.MustAdd(ch.Metadata, file, r.HelmRepoURL(), hex.EncodeToString(sum[:])); err != nil {
		return "", "", fmt.Errorf("registry: index %s: %w", file, err)
	}
	r.index.SortEntries()
	r.index.Generated = time.Now()
	r.charts[file] = data
	return ociURL, res.Manifest.Digest, nil
}

// serveHelm serves index.yaml and the packaged charts it lists.
func (r *Registry) serveHelm(w http.ResponseWriter, req *http.Request) {
	name := strings.TrimPrefix(req.URL.Path, helmPath)
	r.mu.Lock()
	defer r.mu.Unlock()
	if name == "index.yaml" {
		b, err := yaml.Marshal(r.index)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/x-yaml")
		_, _ = w.Write(b)
		return
	}
	data, ok := r.charts[name]
	if !ok {
		http.NotFound(w, req)
		return
	}
	w.Header().Set("Content-Type", "application/gzip")
	_, _ = w.Write(data)
}

// CASecret is the Secret a source's certSecretRef names to trust the
// registry: its ca.crt is the sandbox CA.
func (r *Registry) CASecret(namespace, name string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Data:       map[string][]byte{"ca.crt": r.CA()},
	}
}

// EnsureCASecret creates CASecret(namespace, name), or updates it.
func (r *Registry) EnsureCASecret(ctx context.Context, c client.Client, namespace, name string) error {
	want := r.CASecret(namespace, name)
	err := c.Create(ctx, want)
	if apierrors.IsAlreadyExists(err) {
		cur := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(want), cur); err != nil {
			return fmt.Errorf("registry: secret %s/%s: %w", namespace, name, err)
		}
		cur.Data = want.Data
		err = c.Update(ctx, cur)
	}
	if err != nil {
		return fmt.Errorf("registry: secret %s/%s: %w", namespace, name, err)
	}
	return nil
}
