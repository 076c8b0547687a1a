package chartrender

import (
	"bufio"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"strings"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"helm.sh/helm/v4/pkg/action"
	helmchart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/kube"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Rendered is a chart's manifests as helm-controller would apply them.
type Rendered struct {
	// Objects are the release's manifests and hooks, post-rendered.
	Objects []*unstructured.Unstructured
	// KubeVersion is the Kubernetes version the chart was rendered for.
	KubeVersion string
}

// Render renders ch for the HelmRelease with values client-only (no
// cluster) as helm-controller v1.6.4 installs it
// (internal/action/install.go newInstall): release name
// GetReleaseName shortened as internal/release/name.go ShortenName does,
// namespace GetReleaseNamespace, spec.install's hooks, schema validation
// settings, CRDs left out (install.SkipCRDs: helm-controller applies the
// chart's crds/ by its CRD policy, not in the manifest), its post-renderers
// (postRenderers) with spec.postRenderStrategy, default combined. The
// capabilities are Helm's client-only defaults (its Kubernetes version);
// a chart whose kubeVersion excludes them does not render (Helm's error).
func Render(ctx context.Context, hr *helmv2.HelmRelease, ch *helmchart.Chart, values map[string]any) (*Rendered, error) {
	cfg := action.NewConfiguration()
	cfg.SetLogger(slog.New(slog.NewTextHandler(io.Discard, nil)).Handler())
	in := action.NewInstall(cfg)
	in.DryRunStrategy = action.DryRunClient
	in.ReleaseName = shortenName(hr.GetReleaseName())
	in.Namespace = hr.GetReleaseNamespace()
	in.Devel = true
	in.SkipCRDs = true
	in.IncludeCRDs = false
	in.DisableHooks = hr.GetInstall().DisableHooks
	in.DisableOpenAPIValidation = hr.GetInstall().DisableOpenAPIValidation
	in.SkipSchemaValidation = hr.GetInstall().DisableSchemaValidation
	in.WaitStrategy = kube.HookOnlyStrategy
	in.PostRenderer = postRenderers(hr)
	// internal/action/post_render.go toHelmPostRenderStrategy (Helm 4
	// defaults: combined).
	if s := hr.Spec.PostRenderStrategy; s != "" {
		in.PostRenderStrategy = action.PostRenderStrategy(s)
	} else {
		in.PostRenderStrategy = action.PostRenderStrategyCombined
	}
	if values == nil {
		values = map[string]any{}
	}
	r, err := in.RunWithContext(ctx, ch, values)
	if err != nil {
		return nil, err
	}
	rel, ok := r.(*helmrelease.Release)
	if !ok {
		return nil, fmt.Errorf("only the Chart API v2 is supported")
	}
	out := &Rendered{KubeVersion: cfg.Capabilities.KubeVersion.Version}
	docs := []string{rel.Manifest}
	for _, h := range rel.Hooks {
		docs = append(docs, h.Manifest)
	}
	for _, d := range docs {
		objs, err := decode(d)
		if err != nil {
			return nil, err
		}
		out.Objects = append(out.Objects, objs...)
	}
	return out, nil
}

// decode splits a rendered manifest into objects (empty documents left
// out), each read through JSON as the API machinery reads it (integers
// stay int64).
func decode(manifest string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	rd := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifest)))
	for {
		doc, err := rd.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("rendered manifest: %w", err)
		}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("rendered manifest: %w", err)
		}
		if s := strings.TrimSpace(string(j)); s == "null" || s == "{}" || s == "" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(j); err != nil {
			return nil, fmt.Errorf("rendered manifest: %w", err)
		}
		out = append(out, u)
	}
}

// shortenName is helm-controller v1.6.4 internal/release/name.go
// ShortenName: a name over 53 characters is cut and suffixed with 12 hex
// digits of its SHA-256.
func shortenName(name string) string {
	if len(name) <= 53 {
		return name
	}
	sum := fmt.Sprintf("%x", sha256.Sum256([]byte(name)))
	return name[:53-13] + "-" + sum[:12]
}
