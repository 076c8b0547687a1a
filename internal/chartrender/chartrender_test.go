package chartrender

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/kustomize"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/homelab-ops/bootstrap/internal/sandbox"
	"github.com/homelab-ops/bootstrap/internal/sandbox/registry"
)

// startRegistry is the sandbox's chart host in-process (TLS, its own CA)
// with the web chart at 1.0.0 and 1.1.0, and the CA as a file.
func startRegistry(t *testing.T) (*registry.Registry, string) {
	t.Helper()
	pki, err := sandbox.GeneratePKI(filepath.Join(t.TempDir(), "pki"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := registry.Start(pki, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	for _, v := range []string{"1.0.0", "1.1.0"} {
		if _, _, err := r.PushChart(context.Background(), filepath.Join("testdata", "charts", "web"), v); err != nil {
			t.Fatal(err)
		}
	}
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, r.CA(), 0o600); err != nil {
		t.Fatal(err)
	}
	return r, ca
}

func find(objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind {
			return o
		}
	}
	return nil
}

func TestFetchAndRender(t *testing.T) {
	r, caFile := startRegistry(t)
	ctx := context.Background()
	f, err := NewFetcher(Options{CAFile: caFile, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tests := []struct {
		name    string
		src     Source
		version string // resolved, "" for an error
		err     string
	}{
		{"OCIRepository tag", Source{Kind: "OCIRepository", Ref: "flux-system/web", URL: r.ChartURL("web"), Version: "1.0.0"}, "1.0.0", ""},
		{"OCIRepository semver", Source{Kind: "OCIRepository", Ref: "flux-system/web", URL: r.ChartURL("web"), Version: "~1.0", Semver: true}, "1.0.0", ""},
		{"HelmRepository oci range", Source{Kind: "HelmRepository", Ref: "flux-system/charts", URL: "oci://" + r.Host() + "/charts", Chart: "web", Version: "1.x"}, "1.1.0", ""},
		{"HelmRepository https exact", Source{Kind: "HelmRepository", Ref: "flux-system/charts", URL: r.HelmRepoURL(), Chart: "web", Version: "1.0.0"}, "1.0.0", ""},
		{"HelmRepository https latest", Source{Kind: "HelmRepository", Ref: "flux-system/charts", URL: r.HelmRepoURL(), Chart: "web", Version: "*"}, "1.1.0", ""},
		{"unknown version", Source{Kind: "HelmRepository", Ref: "flux-system/charts", URL: "oci://" + r.Host() + "/charts", Chart: "web", Version: "2.x"}, "", "could not locate a version"},
		{"unknown tag", Source{Kind: "OCIRepository", Ref: "flux-system/web", URL: r.ChartURL("web"), Version: "9.9.9"}, "", "pull"},
		{"unknown chart in index", Source{Kind: "HelmRepository", Ref: "flux-system/charts", URL: r.HelmRepoURL(), Chart: "nope", Version: "*"}, "", "nope"},
		{"not a chart URL", Source{Kind: "HelmRepository", Ref: "flux-system/git", URL: "ssh://git@example/repo", Chart: "web"}, "", "oci:// or https://"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := f.Fetch(ctx, tt.src)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Version != tt.version || got.Chart.Metadata.Name != "web" {
				t.Fatalf("fetched %s %s, want web %s", got.Chart.Metadata.Name, got.Version, tt.version)
			}
		})
	}
}

// Without the registry's CA (system roots only) the TLS handshake fails;
// the source's certSecretRef ca.crt makes it pass.
func TestFetchTrust(t *testing.T) {
	r, _ := startRegistry(t)
	f, err := NewFetcher(Options{Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	src := Source{Kind: "OCIRepository", Ref: "flux-system/web", URL: r.ChartURL("web"), Version: "1.0.0"}
	if _, err := f.Fetch(context.Background(), src); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("system roots only: err %v, want a certificate error", err)
	}
	src.CA = r.CA()
	if _, err := f.Fetch(context.Background(), src); err != nil {
		t.Fatalf("with the certSecretRef CA: %v", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.pem")
	if err := os.WriteFile(bad, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		o   Options
		err string
	}{
		{Options{}, ""},
		{Options{CAFile: bad}, "holds no PEM certificate"},
		{Options{CAFile: filepath.Join(t.TempDir(), "missing")}, "--charts-ca-file"},
		{Options{Timeout: -time.Second}, "--charts-timeout"},
	} {
		err := tt.o.Validate()
		if (tt.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%+v: err %v, want %q", tt.o, err, tt.err)
		}
	}
}

func TestLastMatching(t *testing.T) {
	tags := []string{"1.2.0", "1.10.0", "2.0.0-rc.1", "1.9.9", "latest"}
	for _, tt := range []struct{ ver, want string }{
		{"", "1.10.0"}, {"*", "1.10.0"}, {"1.9.9", "1.9.9"}, {"~1.2", "1.2.0"}, {">=2.0.0-0", "2.0.0-rc.1"}, {"3.x", ""},
	} {
		got, err := lastMatching(tags, tt.ver)
		if got != tt.want || (tt.want == "") != (err != nil) {
			t.Errorf("%q: %q %v, want %q", tt.ver, got, err, tt.want)
		}
	}
}

func TestRenderPostRenderers(t *testing.T) {
	r, caFile := startRegistry(t)
	f, err := NewFetcher(Options{CAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := f.Fetch(context.Background(), Source{Kind: "OCIRepository", Ref: "apps/web", URL: r.ChartURL("web"), Version: "1.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	hr := &helmv2.HelmRelease{}
	hr.Name, hr.Namespace = "web", "apps"
	hr.Spec.TargetNamespace = "web"
	hr.Spec.CommonMetadata = &helmv2.CommonMetadata{Labels: map[string]string{"team": "a", "helm.toolkit.fluxcd.io/name": "overridden"}}
	hr.Spec.PostRenderers = []helmv2.PostRenderer{{Kustomize: &helmv2.Kustomize{
		Patches: []kustomize.Patch{{
			Target: &kustomize.Selector{Kind: "Deployment"},
			Patch:  `[{"op":"replace","path":"/spec/replicas","value":3}]`,
		}},
		Images: []kustomize.Image{{Name: "registry.example/web", NewName: "mirror.example/web"}},
	}}}
	out, err := Render(context.Background(), hr, got.Chart, map[string]any{"replicas": 2})
	if err != nil {
		t.Fatal(err)
	}
	d := find(out.Objects, "Deployment")
	if d == nil {
		t.Fatalf("no Deployment in %d objects", len(out.Objects))
	}
	y, _ := yaml.Marshal(d.Object)
	replicas, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	img := ""
	if len(containers) == 1 {
		img, _ = containers[0].(map[string]any)["image"].(string)
	}
	labels := d.GetLabels()
	// TargetNamespace: the release is named <targetNamespace>-<name>
	// (GetReleaseName) in the target namespace.
	if d.GetName() != "web-web" || d.GetNamespace() != "web" {
		t.Errorf("release name/namespace: %s/%s\n%s", d.GetNamespace(), d.GetName(), y)
	}
	if replicas != 3 {
		t.Errorf("the kustomize patch did not apply (values said 2): replicas %d\n%s", replicas, y)
	}
	if img != "mirror.example/web:1.1.0" {
		t.Errorf("image %s, want the images post-renderer's mirror.example/web:1.1.0", img)
	}
	want := map[string]string{"team": "a", "helm.toolkit.fluxcd.io/name": "web", "helm.toolkit.fluxcd.io/namespace": "apps"}
	for k, v := range want {
		if labels[k] != v {
			t.Errorf("label %s=%q, want %q (origin labels win over commonMetadata)\n%s", k, labels[k], v, y)
		}
	}
	if find(out.Objects, "Secret") == nil {
		t.Error("the chart's Secret is not rendered")
	}
}

func TestSourceOf(t *testing.T) {
	objs := map[string]map[string]any{
		"OCIRepository/flux-system/web": {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "OCIRepository",
			"metadata": map[string]any{"name": "web", "namespace": "flux-system"},
			"spec":     map[string]any{"url": "oci://r.example/charts/web", "ref": map[string]any{"semver": "1.x"}, "certSecretRef": map[string]any{"name": "ca"}}},
		"Secret/flux-system/ca": {"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "ca", "namespace": "flux-system"},
			"stringData": map[string]any{"ca.crt": "PEM"}},
		"HelmRepository/apps/charts": {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "HelmRepository",
			"metadata": map[string]any{"name": "charts", "namespace": "apps"},
			"spec":     map[string]any{"url": "https://charts.example/", "type": "default"}},
		"HelmRepository/apps/aws": {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "HelmRepository",
			"metadata": map[string]any{"name": "aws", "namespace": "apps"},
			"spec":     map[string]any{"url": "oci://x.dkr.ecr.example/charts", "type": "oci", "provider": "aws"}},
	}
	lookup := func(_, kind, ns, name string) *unstructured.Unstructured {
		if o := objs[kind+"/"+ns+"/"+name]; o != nil {
			return &unstructured.Unstructured{Object: o}
		}
		return nil
	}
	hr := func(spec string) *helmv2.HelmRelease {
		h := &helmv2.HelmRelease{}
		h.Name, h.Namespace = "web", "apps"
		if err := yaml.Unmarshal([]byte(spec), &h.Spec); err != nil {
			t.Fatal(err)
		}
		return h
	}
	for _, tt := range []struct {
		name, spec string
		want       Source
		err        string
	}{
		{"chartRef OCIRepository", `chartRef: {kind: OCIRepository, name: web, namespace: flux-system}`,
			Source{Kind: "OCIRepository", Ref: "flux-system/web", URL: "oci://r.example/charts/web", Version: "1.x", Semver: true, CA: []byte("PEM")}, ""},
		{"chart HelmRepository", `chart: {spec: {chart: web, sourceRef: {kind: HelmRepository, name: charts}}}`,
			Source{Kind: "HelmRepository", Ref: "apps/charts", URL: "https://charts.example/", Chart: "web", Version: "*"}, ""},
		{"chartRef HelmChart", `chartRef: {kind: HelmChart, name: web}`, Source{}, "only an OCIRepository"},
		{"GitRepository", `chart: {spec: {chart: ./charts/web, sourceRef: {kind: GitRepository, name: repo}}}`, Source{}, "only a HelmRepository"},
		{"not rendered", `chartRef: {kind: OCIRepository, name: gone}`, Source{}, "not rendered by the repository"},
		{"provider", `chart: {spec: {chart: web, version: 1.0.0, sourceRef: {kind: HelmRepository, name: aws}}}`, Source{}, "aws provider"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SourceOf(hr(tt.spec), lookup)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.key() != tt.want.key() || got.Ref != tt.want.Ref {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestSourceStringHidesUserInfo(t *testing.T) {
	s := Source{Kind: "HelmRepository", Ref: "a/b", URL: "https://user:secret@charts.example/", Chart: "web", Version: "1.0.0"}
	if strings.Contains(s.String(), "secret") || strings.Contains(s.String(), "user") {
		t.Fatal(s.String())
	}
}

// A chart whose kubeVersion excludes Helm's client-only capabilities does
// not render (Helm's error, which the diff turns into a note).
func TestRenderKubeVersion(t *testing.T) {
	r, caFile := startRegistry(t)
	f, err := NewFetcher(Options{CAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := f.Fetch(context.Background(), Source{Kind: "OCIRepository", Ref: "apps/web", URL: r.ChartURL("web"), Version: "1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	hr := &helmv2.HelmRelease{}
	hr.Name, hr.Namespace = "web", "apps"
	if _, err := Render(context.Background(), hr, got.Chart, nil); err != nil {
		t.Fatalf("no kubeVersion constraint: %v", err)
	}
	ch := *got.Chart
	md := *ch.Metadata
	md.KubeVersion = ">= 9.0.0"
	ch.Metadata = &md
	if _, err := Render(context.Background(), hr, &ch, nil); err == nil || !strings.Contains(err.Error(), "kubeVersion") {
		t.Fatalf("kubeVersion >= 9.0.0: err %v, want Helm's kubeVersion error", err)
	}
}

// Response bodies are cut at the limit.
func TestGetBounded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write(bytes.Repeat([]byte("x"), 2048))
	}))
	defer srv.Close()
	if _, err := get(context.Background(), srv.Client(), srv.URL, 1024); err == nil || !strings.Contains(err.Error(), "over the 1024-byte limit") {
		t.Fatalf("err %v, want the limit", err)
	}
	if b, err := get(context.Background(), srv.Client(), srv.URL, 4096); err != nil || len(b) != 2048 {
		t.Fatalf("%d bytes, %v", len(b), err)
	}
	bt := &bounded{ctx: context.Background(), rt: srv.Client().Transport, max: 1024}
	resp, err := (&http.Client{Transport: bt}).Get(srv.URL)
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("bounded transport: err %v, want the limit", err)
	}
}
