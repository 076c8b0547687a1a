package patches

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/pkg/loader"
	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// PatchSync applies a FluxInstance's spec.kustomize.patches to the sync
// objects the Flux Operator generates from its spec.sync (the source and the
// root Kustomization). The operator builds them in the same kustomization as
// the controllers, with the instance's patches (flux-operator v0.58
// internal/builder/templates.go kustomizationTmpl: resources list sync.yaml,
// rendered by syncTmpl, beside the components, and `{{ .Patches }}` closes
// the same patches list; build.go Build runs one kustomize.SecureBuild over
// it). Each patch is applied in order with kustomize's own patch
// transformer, as that build does; a patch that selects none of the sync
// objects is left to the controllers' render, where the rest of that build
// is (it is proven there: overlay.patch-landed).
func PatchSync(objs []*unstructured.Unstructured, ps []types.Patch) ([]*unstructured.Unstructured, error) {
	if len(ps) == 0 {
		return objs, nil
	}
	m, err := syncResMap(objs)
	if err != nil {
		return nil, err
	}
	h := syncHelpers()
	for i, p := range ps {
		ok, err := selectsAny(m, p)
		if err != nil {
			return nil, fmt.Errorf("patches[%d]: %w", i, err)
		}
		if !ok {
			continue
		}
		if err := transform(h, p, m); err != nil {
			return nil, fmt.Errorf("patches[%d]: %w", i, err)
		}
	}
	out := make([]*unstructured.Unstructured, 0, m.Size())
	for _, r := range m.Resources() {
		obj, err := r.Map()
		if err != nil {
			return nil, err
		}
		out = append(out, &unstructured.Unstructured{Object: obj})
	}
	return out, nil
}

// SyncYAML is the sync objects as the multi-document YAML an overlay takes
// (Overlay.SetSync).
func SyncYAML(objs []*unstructured.Unstructured) ([]byte, error) {
	m, err := syncResMap(objs)
	if err != nil {
		return nil, err
	}
	return m.AsYaml()
}

func syncResMap(objs []*unstructured.Unstructured) (resmap.ResMap, error) {
	var docs []byte
	for _, u := range objs {
		b, err := yaml.Marshal(u.Object)
		if err != nil {
			return nil, err
		}
		docs = append(append(docs, "---\n"...), b...)
	}
	rf := resmap.NewFactory(provider.NewDefaultDepProvider().GetResourceFactory())
	return rf.NewResMapFromBytes(docs)
}

// syncHelpers: inline patches only (a FluxInstance's patches are inline:
// InlineOverlay), so the loader is an empty in-memory file system.
func syncHelpers() *resmap.PluginHelpers {
	dp := provider.NewDefaultDepProvider()
	rf := resmap.NewFactory(dp.GetResourceFactory())
	return resmap.NewPluginHelpers(loader.NewFileLoaderAtRoot(filesys.MakeFsInMemory()), dp.GetFieldValidator(), rf, types.DisabledPluginConfig())
}

// selectsAny says a patch would change one of m's objects: its target
// selects one, or, for a strategic-merge patch without a target, the object
// it names is there (kustomize's PatchTransformer matches it by id).
func selectsAny(m resmap.ResMap, p types.Patch) (bool, error) {
	if p.Target != nil {
		sel, err := m.Select(*p.Target)
		return len(sel) > 0, err
	}
	var meta struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal([]byte(p.Patch), &meta); err != nil || meta.Kind == "" {
		return false, nil // not a strategic-merge patch naming an object: the controllers' render reports it
	}
	for _, r := range m.Resources() {
		if r.GetKind() == meta.Kind && r.GetName() == meta.Metadata.Name && (meta.Metadata.Namespace == "" || meta.Metadata.Namespace == r.GetNamespace()) {
			return true, nil
		}
	}
	return false, nil
}
