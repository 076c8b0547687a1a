package patches

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// PatchResult is what one patch did.
type PatchResult struct {
	// Name is the patch's position and file, e.g. "kustomization.yaml patches[0] (strict.yaml)".
	Name string
	// Target is the patch's target selector, or the object a strategic-merge
	// patch names.
	Target string
	// Changed lists the objects the patch changed, as kind/namespace/name.
	Changed []string
	// Err is kustomize's error when the patch could not be applied; the
	// patch is then left out of the result.
	Err error
}

// Result is the overlay applied to the components.
type Result struct {
	// YAML is the final multi-document render.
	YAML    []byte
	Patches []PatchResult
	// Base and Final are the Deployments before and after the overlay.
	Base, Final []appsv1.Deployment
}

const (
	overlayRoot    = "/overlay"
	componentsFile = "bootstrap-components.yaml"
)

// Apply runs the overlay's patches over the components one at a time, in
// order, so each patch's effect can be attributed to it. The result is the
// same as applying all patches in one kustomization.
func Apply(components []byte, ov *Overlay) (*Result, error) {
	mem := filesys.MakeFsInMemory()
	if ov.fsys != nil {
		if err := copyFS(ov.fsys, mem); err != nil {
			return nil, fmt.Errorf("load overlays %s: %w", ov.Name, err)
		}
	}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())

	build := func(input []byte, patches []types.Patch) (resmap.ResMap, error) {
		kz := types.Kustomization{
			TypeMeta:  types.TypeMeta{APIVersion: types.KustomizationVersion, Kind: types.KustomizationKind},
			Resources: []string{componentsFile},
			Patches:   patches,
		}
		data, err := yaml.Marshal(kz)
		if err != nil {
			return nil, err
		}
		if err := mem.WriteFile(path.Join(overlayRoot, "kustomization.yaml"), data); err != nil {
			return nil, err
		}
		if err := mem.WriteFile(path.Join(overlayRoot, componentsFile), input); err != nil {
			return nil, err
		}
		return k.Run(mem, overlayRoot)
	}

	// Build once with no patches so every comparison is between kustomize's
	// own renderings.
	cur, err := build(components, nil)
	if err != nil {
		return nil, fmt.Errorf("load rendered components: %w", err)
	}
	curYAML, err := cur.AsYaml()
	if err != nil {
		return nil, err
	}
	res := &Result{}
	if res.Base, err = deployments(cur); err != nil {
		return nil, err
	}
	for i, p := range ov.Patches {
		pr := PatchResult{}
		pr.Name, pr.Target = ov.describe(i)
		next, err := build(curYAML, []types.Patch{p})
		if err != nil {
			pr.Err = err
			res.Patches = append(res.Patches, pr)
			continue
		}
		if pr.Changed, err = changed(cur, next); err != nil {
			return nil, err
		}
		cur = next
		if curYAML, err = cur.AsYaml(); err != nil {
			return nil, err
		}
		res.Patches = append(res.Patches, pr)
	}
	res.YAML = curYAML
	if res.Final, err = deployments(cur); err != nil {
		return nil, err
	}
	return res, nil
}

// changed lists the objects whose YAML differs between two builds, including
// objects a patch renamed.
func changed(before, after resmap.ResMap) ([]string, error) {
	var out []string
	for _, r := range after.Resources() {
		prev, err := before.GetById(r.OrgId())
		a, aerr := r.AsYAML()
		if aerr != nil {
			return nil, aerr
		}
		if err != nil {
			out = append(out, idString(r.CurId().Kind, r.GetNamespace(), r.GetName()))
			continue
		}
		b, berr := prev.AsYAML()
		if berr != nil {
			return nil, berr
		}
		if !bytes.Equal(a, b) || r.CurId() != prev.CurId() {
			out = append(out, idString(r.CurId().Kind, r.GetNamespace(), r.GetName()))
		}
	}
	return out, nil
}

func idString(kind, ns, name string) string { return joinNonEmpty("/", kind, ns, name) }

func deployments(m resmap.ResMap) ([]appsv1.Deployment, error) {
	var out []appsv1.Deployment
	for _, r := range m.Resources() {
		if r.GetKind() != "Deployment" {
			continue
		}
		data, err := r.AsYAML()
		if err != nil {
			return nil, err
		}
		var d appsv1.Deployment
		if err := yaml.Unmarshal(data, &d); err != nil {
			return nil, fmt.Errorf("decode Deployment %s/%s: %w", r.GetNamespace(), r.GetName(), err)
		}
		out = append(out, d)
	}
	return out, nil
}

// copyFS copies the overlay's files under overlayRoot in mem.
func copyFS(src fs.FS, mem filesys.FileSystem) error {
	return fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := path.Join(overlayRoot, p)
		if d.IsDir() {
			return mem.MkdirAll(dst)
		}
		data, err := fs.ReadFile(src, p)
		if err != nil {
			return err
		}
		return mem.WriteFile(dst, data)
	})
}
