package chartrender

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/kustomize"
	helmpostrender "helm.sh/helm/v4/pkg/postrenderer"
	"sigs.k8s.io/kustomize/api/builtins"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resmap"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// The post-renderers of helm-controller v1.6.4, whose package
// (internal/postrender) cannot be imported: the same renderers in the same
// order, built from the same HelmRelease fields, over the same kustomize
// API. Each type names the file it follows.

// postRenderers is helm-controller v1.6.4 internal/postrender/build.go
// BuildPostRenderers: every spec.postRenderers[].kustomize (patches and
// images) in order, then spec.commonMetadata's labels and annotations,
// then the origin labels (helm.toolkit.fluxcd.io/name and /namespace),
// last so that they win a label key collision with commonMetadata.
func postRenderers(rel *helmv2.HelmRelease) helmpostrender.PostRenderer {
	var rs []helmpostrender.PostRenderer
	for _, r := range rel.Spec.PostRenderers {
		if r.Kustomize != nil {
			rs = append(rs, &kustomizeRenderer{patches: r.Kustomize.Patches, images: r.Kustomize.Images})
		}
	}
	if rel.Spec.CommonMetadata != nil {
		rs = append(rs, &commonRenderer{labels: rel.Spec.CommonMetadata.Labels, annotations: rel.Spec.CommonMetadata.Annotations})
	}
	rs = append(rs, &commonRenderer{labels: map[string]string{
		helmv2.GroupVersion.Group + "/name":      rel.Name,
		helmv2.GroupVersion.Group + "/namespace": rel.Namespace,
	}})
	return combined(rs)
}

// combined is internal/postrender/combined.go Combined: each renderer in
// the order of insertion.
type combined []helmpostrender.PostRenderer

func (c combined) Run(in *bytes.Buffer) (*bytes.Buffer, error) {
	out := in
	for _, r := range c {
		var err error
		if out, err = r.Run(out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// kustomizeRenderer is internal/postrender/kustomize.go Kustomize: the
// rendered manifests as the one resource of an in-memory kustomization
// with the patches and images, built by krusty with no load restrictions
// and builtin plugins only.
type kustomizeRenderer struct {
	patches []kustomize.Patch
	images  []kustomize.Image
}

// kustomizeMu is helm-controller's kustomizeRenderMutex (kustomize's
// concurrent map access, kubernetes-sigs/kustomize#3659).
var kustomizeMu sync.Mutex

func (k *kustomizeRenderer) Run(in *bytes.Buffer) (*bytes.Buffer, error) {
	fs := filesys.MakeFsInMemory()
	cfg := kustypes.Kustomization{}
	cfg.APIVersion = kustypes.KustomizationVersion
	cfg.Kind = kustypes.KustomizationKind
	for _, im := range k.images {
		cfg.Images = append(cfg.Images, kustypes.Image{Name: im.Name, NewName: im.NewName, NewTag: im.NewTag, Digest: im.Digest})
	}
	const input = "helm-output.yaml"
	cfg.Resources = append(cfg.Resources, input)
	if err := fs.WriteFile(input, in.Bytes()); err != nil {
		return nil, err
	}
	for _, p := range k.patches {
		cfg.Patches = append(cfg.Patches, kustypes.Patch{Patch: p.Patch, Target: selector(p.Target)})
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	if err := fs.WriteFile("kustomization.yaml", b); err != nil {
		return nil, err
	}
	kustomizeMu.Lock()
	defer kustomizeMu.Unlock()
	m, err := krusty.MakeKustomizer(&krusty.Options{
		LoadRestrictions: kustypes.LoadRestrictionsNone,
		PluginConfig:     kustypes.DisabledPluginConfig(),
	}).Run(fs, ".")
	if err != nil {
		return nil, fmt.Errorf("post-renderer kustomize: %w", err)
	}
	y, err := m.AsYaml()
	if err != nil {
		return nil, err
	}
	return bytes.NewBuffer(y), nil
}

func selector(s *kustomize.Selector) *kustypes.Selector {
	if s == nil {
		return nil
	}
	out := &kustypes.Selector{}
	out.Gvk.Group, out.Gvk.Kind, out.Gvk.Version = s.Group, s.Kind, s.Version
	out.Name, out.Namespace = s.Name, s.Namespace
	out.LabelSelector, out.AnnotationSelector = s.LabelSelector, s.AnnotationSelector
	return out
}

// commonRenderer is internal/postrender/common_renderer.go CommonRenderer
// (and OriginLabels, the same transformer with the origin labels): the
// builtin label and annotation transformers on metadata only
// (internal/postrender/transformer.go).
type commonRenderer struct {
	labels, annotations map[string]string
}

func (c *commonRenderer) Run(in *bytes.Buffer) (*bytes.Buffer, error) {
	var ts []resmap.Transformer
	if c.labels != nil {
		ts = append(ts, &builtins.LabelTransformerPlugin{Labels: c.labels,
			FieldSpecs: []kustypes.FieldSpec{{Path: "metadata/labels", CreateIfNotPresent: true}}})
	}
	if c.annotations != nil {
		ts = append(ts, &builtins.AnnotationsTransformerPlugin{Annotations: c.annotations,
			FieldSpecs: []kustypes.FieldSpec{{Path: "metadata/annotations", CreateIfNotPresent: true}}})
	}
	if len(ts) == 0 {
		return in, nil
	}
	m, err := resmap.NewFactory(provider.NewDefaultDepProvider().GetResourceFactory()).NewResMapFromBytes(in.Bytes())
	if err != nil {
		return nil, err
	}
	for _, t := range ts {
		if err := t.Transform(m); err != nil {
			return nil, err
		}
	}
	y, err := m.AsYaml()
	if err != nil {
		return nil, err
	}
	return bytes.NewBuffer(y), nil
}
