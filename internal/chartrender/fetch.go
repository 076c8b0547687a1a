// Package chartrender is `bootstrap diff --charts`: a HelmRelease's chart
// fetched from its chart source (an OCIRepository its chartRef names, or
// the HelmRepository of type oci or https its spec.chart reads) and
// rendered client-only with Helm's own action library, with
// helm-controller v1.6.4's post-renderers: the manifests helm-controller
// would apply. Fetches are bounded (a timeout per chart, source-controller's
// size limits) and never send credentials.
package chartrender

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/Masterminds/semver/v3"
	helmchart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	helmreg "helm.sh/helm/v4/pkg/registry"
	repo "helm.sh/helm/v4/pkg/repo/v1"
	"oras.land/oras-go/v2/registry/remote/auth"
)

// The bounds of a fetch: source-controller v1.9.5's defaults
// (internal/helm/helm.go MaxIndexSize, MaxChartSize; main.go
// --helm-index-max-size, --helm-chart-max-size).
const (
	MaxIndexSize int64 = 50 << 20
	MaxChartSize int64 = 10 << 20
	// DefaultTimeout bounds one chart's fetch (index, tags, manifest and
	// layer), as a HelmChart's default spec.timeout does.
	DefaultTimeout = 60 * time.Second
)

// Options bound the fetches.
type Options struct {
	// Timeout bounds each chart's fetch (0: DefaultTimeout).
	Timeout time.Duration
	// CAFile is a PEM bundle trusted in addition to the system roots
	// ("": system roots, and a source's rendered certSecretRef ca.crt).
	CAFile string
}

// Validate reads the CA file: every flag checked before the first request.
func (o Options) Validate() error {
	if o.Timeout < 0 {
		return fmt.Errorf("--charts-timeout %s: a positive duration (e.g. 60s)", o.Timeout)
	}
	if o.CAFile != "" {
		if _, err := o.pool(nil); err != nil {
			return err
		}
	}
	return nil
}

func (o Options) pool(extra []byte) (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if o.CAFile != "" {
		b, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("--charts-ca-file: %w", err)
		}
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("--charts-ca-file %s holds no PEM certificate: pass a CA bundle", o.CAFile)
		}
	}
	if len(extra) > 0 && !pool.AppendCertsFromPEM(extra) {
		return nil, errors.New("the certSecretRef's ca.crt holds no PEM certificate")
	}
	return pool, nil
}

// Source is where a chart is fetched from, as source-controller resolves it.
type Source struct {
	// Kind is the source's kind: OCIRepository (the artifact is the chart)
	// or HelmRepository (type oci or default).
	Kind string
	// Ref is the source as namespace/name.
	Ref string
	// URL is the source's spec.url (oci://… or https://…).
	URL string
	// Chart is the chart name in a HelmRepository.
	Chart string
	// Version is a HelmChart's version (an exact version or a semver
	// range), an OCIRepository's ref.semver (a range) or ref.tag.
	Version string
	// Semver says Version is a range (OCIRepository ref.semver).
	Semver bool
	// Digest pins an OCIRepository (ref.digest).
	Digest string
	// Insecure is the source's spec.insecure: plain HTTP.
	Insecure bool
	// CA is the certSecretRef's ca.crt when the repository renders it.
	CA []byte
}

// String names the source without credentials (a URL's user info dropped).
func (s Source) String() string {
	u := s.URL
	if i := strings.Index(u, "@"); i >= 0 {
		if j := strings.Index(u, "://"); j >= 0 && j < i {
			u = u[:j+3] + u[i+1:]
		}
	}
	out := s.Kind + " " + s.Ref + " (" + u
	if s.Chart != "" {
		out += ", chart " + s.Chart
	}
	switch {
	case s.Digest != "":
		out += " @" + s.Digest
	case s.Version != "":
		out += " " + s.Version
	}
	return out + ")"
}

func (s Source) key() string {
	return strings.Join([]string{s.Kind, s.URL, s.Chart, s.Version, fmt.Sprint(s.Semver), s.Digest, fmt.Sprint(s.Insecure), string(s.CA)}, "\x00")
}

// Fetched is a chart and the version it resolved to.
type Fetched struct {
	Chart   *helmchart.Chart
	Version string
}

// Fetcher fetches charts, each source once per run.
type Fetcher struct {
	o   Options
	dir string

	mu    sync.Mutex
	cache map[string]*fetchResult
}

type fetchResult struct {
	once sync.Once
	f    *Fetched
	err  error
}

// NewFetcher makes a fetcher; Close removes its scratch directory (Helm's
// registry client state, never the user's ~/.config/helm).
func NewFetcher(o Options) (*Fetcher, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	dir, err := os.MkdirTemp("", "bootstrap-charts-")
	if err != nil {
		return nil, err
	}
	return &Fetcher{o: o, dir: dir, cache: map[string]*fetchResult{}}, nil
}

// Close removes the scratch directory.
func (f *Fetcher) Close() error { return os.RemoveAll(f.dir) }

// Fetch fetches the chart of s (cached per source).
func (f *Fetcher) Fetch(ctx context.Context, s Source) (*Fetched, error) {
	f.mu.Lock()
	r := f.cache[s.key()]
	if r == nil {
		r = &fetchResult{}
		f.cache[s.key()] = r
	}
	f.mu.Unlock()
	r.once.Do(func() {
		ctx, cancel := context.WithTimeout(ctx, f.o.Timeout)
		defer cancel()
		r.f, r.err = f.fetch(ctx, s)
		if r.err != nil && ctx.Err() != nil {
			r.err = fmt.Errorf("%w (timed out after %s: --charts-timeout)", r.err, f.o.Timeout)
		}
	})
	return r.f, r.err
}

func (f *Fetcher) client(ctx context.Context, s Source) (*http.Client, error) {
	pool, err := f.o.pool(s.CA)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	tr.Proxy = http.ProxyFromEnvironment
	return &http.Client{Transport: &bounded{ctx: ctx, rt: tr, max: MaxIndexSize}, Timeout: f.o.Timeout}, nil
}

// bounded ties every request to the fetch's context and cuts every
// response body at max bytes.
type bounded struct {
	ctx context.Context
	rt  http.RoundTripper
	max int64
}

func (b *bounded) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.rt.RoundTrip(req.WithContext(b.ctx))
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > b.max {
		resp.Body.Close()
		return nil, fmt.Errorf("%s: %d bytes, over the %d-byte limit", req.URL.Redacted(), resp.ContentLength, b.max)
	}
	resp.Body = &limitedBody{rc: resp.Body, left: b.max, url: req.URL.Redacted()}
	return resp, nil
}

type limitedBody struct {
	rc   io.ReadCloser
	left int64
	url  string
}

func (l *limitedBody) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, fmt.Errorf("%s: over the size limit", l.url)
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.rc.Read(p)
	l.left -= int64(n)
	return n, err
}

func (l *limitedBody) Close() error { return l.rc.Close() }

func (f *Fetcher) fetch(ctx context.Context, s Source) (*Fetched, error) {
	// Anonymous: user info in a URL is never sent.
	if u, err := url.Parse(s.URL); err == nil && u.User != nil {
		u.User = nil
		s.URL = u.String()
	}
	hc, err := f.client(ctx, s)
	if err != nil {
		return nil, err
	}
	switch {
	case strings.HasPrefix(s.URL, "oci://"):
		return f.fetchOCI(s, hc)
	case s.Kind == "HelmRepository" && (strings.HasPrefix(s.URL, "https://") || strings.HasPrefix(s.URL, "http://")):
		return f.fetchIndex(ctx, s, hc)
	}
	return nil, fmt.Errorf("%s: an oci:// or https:// URL is needed", s)
}

// fetchOCI pulls the chart with Helm's registry client, anonymously: its
// authorizer is ours with no credential (Helm's default one reads
// ~/.config/helm and falls back to ~/.docker's stores), and its
// credentials file is a fresh one in the scratch directory.
func (f *Fetcher) fetchOCI(s Source, hc *http.Client) (*Fetched, error) {
	opts := []helmreg.ClientOption{
		helmreg.ClientOptHTTPClient(hc),
		helmreg.ClientOptAuthorizer(auth.Client{Client: hc, Credential: func(context.Context, string) (auth.Credential, error) {
			return auth.EmptyCredential, nil
		}}),
		helmreg.ClientOptCredentialsFile(filepath.Join(f.dir, "registry-config.json")),
		helmreg.ClientOptWriter(io.Discard),
	}
	if s.Insecure {
		opts = append(opts, helmreg.ClientOptPlainHTTP())
	}
	rc, err := helmreg.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	base := strings.TrimSuffix(strings.TrimPrefix(s.URL, "oci://"), "/")
	if s.Kind == "HelmRepository" {
		base += "/" + s.Chart
	}
	var ref, version string
	switch {
	case s.Digest != "":
		ref = base + "@" + s.Digest
	case s.Kind == "HelmRepository" || s.Semver:
		tags, err := rc.Tags(base)
		if err != nil {
			return nil, fmt.Errorf("%s: list tags: %w", s, err)
		}
		if version, err = lastMatching(tags, s.Version); err != nil {
			return nil, fmt.Errorf("%s: %w", s, err)
		}
		ref = base + ":" + strings.ReplaceAll(version, "+", "_")
	default:
		version = s.Version
		if version == "" {
			version = "latest" // source-controller getArtifactRef: name.DefaultTag
		}
		ref = base + ":" + version
	}
	res, err := rc.Pull(ref, helmreg.PullOptWithChart(true))
	if err != nil {
		return nil, fmt.Errorf("%s: pull %s: %w", s, ref, err)
	}
	if res.Chart == nil || int64(len(res.Chart.Data)) > MaxChartSize {
		return nil, fmt.Errorf("%s: the chart layer is missing or over %d bytes", s, MaxChartSize)
	}
	return load(s, res.Chart.Data)
}

// lastMatching is source-controller v1.9.5
// internal/helm/repository/oci_chart_repository.go
// getLastMatchingVersionOrConstraint: an exact tag first, else the
// highest tag in the range ("" or "*": the latest stable).
func lastMatching(tags []string, ver string) (string, error) {
	for _, t := range tags {
		if ver != "" && t == ver {
			return t, nil
		}
	}
	expr := ver
	if expr == "" {
		expr = "*"
	}
	c, err := semver.NewConstraint(expr)
	if err != nil {
		return "", fmt.Errorf("version %q: %w", ver, err)
	}
	var vs []*semver.Version
	for _, t := range tags {
		v, err := semver.NewVersion(t)
		if err == nil && c.Check(v) {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return "", fmt.Errorf("could not locate a version matching provided version string %s", ver)
	}
	sort.Sort(semver.Collection(vs))
	return vs[len(vs)-1].Original(), nil
}

// fetchIndex reads the repository's index.yaml (Helm's repo package),
// resolves the version as Helm's IndexFile.Get does, and downloads the
// chart it lists.
func (f *Fetcher) fetchIndex(ctx context.Context, s Source, hc *http.Client) (*Fetched, error) {
	base := strings.TrimSuffix(s.URL, "/") + "/"
	idxData, err := get(ctx, hc, base+"index.yaml", MaxIndexSize)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s, err)
	}
	tmp, err := os.CreateTemp(f.dir, "index-*.yaml")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(idxData); err != nil {
		tmp.Close()
		return nil, err
	}
	tmp.Close()
	idx, err := repo.LoadIndexFile(tmp.Name())
	if err != nil {
		return nil, fmt.Errorf("%s: index.yaml: %w", s, err)
	}
	cv, err := idx.Get(s.Chart, s.Version)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s, err)
	}
	if len(cv.URLs) == 0 {
		return nil, fmt.Errorf("%s: chart %s %s has no URL in index.yaml", s, cv.Name, cv.Version)
	}
	u, err := repo.ResolveReferenceURL(base, cv.URLs[0])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s, err)
	}
	data, err := get(ctx, hc, u, MaxChartSize)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s, err)
	}
	return load(s, data)
}

func get(ctx context.Context, hc *http.Client, u string, max int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", req.URL.Redacted(), resp.Status)
	}
	var buf bytes.Buffer
	n, err := io.Copy(&buf, io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", req.URL.Redacted(), err)
	}
	if n > max {
		return nil, fmt.Errorf("GET %s: over the %d-byte limit", req.URL.Redacted(), max)
	}
	return buf.Bytes(), nil
}

func load(s Source, data []byte) (*Fetched, error) {
	ch, err := loader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: load chart: %w", s, err)
	}
	return &Fetched{Chart: ch, Version: ch.Metadata.Version}, nil
}
