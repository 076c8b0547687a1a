package patches

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/kustomize/api/builtins"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/pkg/loader"
	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/resid"
	"sigs.k8s.io/yaml"

	"github.com/homelab-ops/bootstrap/pkg/verify"
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
	// Sync lists the objects the patch changed that are not the
	// controllers' (a repository's gotk-sync.yaml): the sync applies them
	// with the root.
	Sync []string
	// SyncPhase: the Sync objects are a FluxInstance's sync objects, which
	// phase sync applies (Overlay.SetSync).
	SyncPhase bool
}

// Result is the overlay applied to the components.
type Result struct {
	// YAML is the final multi-document render.
	YAML    []byte
	Patches []PatchResult
	// Base and Final are the Deployments before and after the overlay.
	Base, Final []appsv1.Deployment
	// Committed are the Deployments of a repository's committed
	// gotk-components.yaml, and CommittedFile names it (Overlay.Repository
	// only; "" otherwise).
	Committed     []appsv1.Deployment
	CommittedFile string
	// SyncObjects names the sync objects the patches were applied to
	// besides the controllers (Overlay.SetSync), for messages.
	SyncObjects []string
}

// Apply runs the overlay's patches over the components one at a time, in
// order, with kustomize's own patch transformer, so each patch's effect can be
// attributed to it. The result is what a kustomization listing the same
// patches over the components builds.
func Apply(components []byte, ov *Overlay) (*Result, error) {
	mem := filesys.MakeFsInMemory()
	if ov.fsys != nil {
		if err := copyFS(ov.fsys, mem); err != nil {
			return nil, fmt.Errorf("load overlays %s: %w", ov.Name, err)
		}
	}
	dp := provider.NewDefaultDepProvider()
	rf := resmap.NewFactory(dp.GetResourceFactory())
	// Patch paths resolve inside the overlay directory only.
	helpers := resmap.NewPluginHelpers(loader.NewFileLoaderAtRoot(mem), dp.GetFieldValidator(), rf, types.DisabledPluginConfig())

	cur, err := rf.NewResMapFromBytes(components)
	if err != nil {
		return nil, fmt.Errorf("load rendered components: %w", err)
	}
	res := &Result{}
	if res.Base, err = deployments(cur); err != nil {
		return nil, err
	}
	// A repository's customization: its other resources are there for the
	// patches that target them, and left out of the output.
	others := map[resid.ResId]bool{}
	if ov.Repository {
		res.CommittedFile = path.Join(ov.Name, ComponentsFile)
		committed, err := rf.NewResMapFromBytes(ov.Committed)
		if err != nil {
			return nil, verify.InputErrorf("%s: %w", res.CommittedFile, err)
		}
		if res.Committed, err = deployments(committed); err != nil {
			return nil, verify.InputErrorf("%s: %w", res.CommittedFile, err)
		}
		for _, o := range ov.others {
			m, err := loadResources(mem, rf, o)
			if err != nil {
				return nil, verify.InputErrorf("%s: resource %s: %w", ov.Name, o, err)
			}
			for _, r := range m.Resources() {
				others[r.OrgId()] = true
			}
			if err := cur.AppendAll(m); err != nil {
				return nil, verify.InputErrorf("%s: resource %s: %w", ov.Name, o, err)
			}
		}
	}
	if len(ov.sync) > 0 {
		// A FluxInstance's sync objects: in the operator's build with the
		// controllers and the patches (SetSync), applied by phase sync.
		m, err := rf.NewResMapFromBytes(ov.sync)
		if err != nil {
			return nil, fmt.Errorf("%s: the sync objects: %w", ov.Name, err)
		}
		for _, r := range m.Resources() {
			others[r.OrgId()] = true
			res.SyncObjects = append(res.SyncObjects, idString(r.GetKind(), r.GetNamespace(), r.GetName()))
		}
		if err := cur.AppendAll(m); err != nil {
			return nil, fmt.Errorf("%s: the sync objects: %w", ov.Name, err)
		}
	}
	for i, p := range ov.Patches {
		pr := PatchResult{SyncPhase: len(ov.sync) > 0}
		pr.Name, pr.Target = ov.describe(i)
		next := cur.DeepCopy()
		if pr.Err = transform(helpers, p, next); pr.Err == nil {
			if pr.Changed, err = changed(cur, next, targets(cur, p)); err != nil {
				return nil, err
			}
			pr.Changed, pr.Sync = splitChanged(pr.Changed, cur, others)
			cur = next
		}
		res.Patches = append(res.Patches, pr)
	}
	if ov.Components {
		// The documented form: build the kustomization itself, as `kubectl
		// kustomize` would, with the render as gotk-components.yaml. The
		// per-patch runs above attribute each patch; this is the output.
		if cur, err = buildWithComponents(mem, components); err != nil {
			return nil, fmt.Errorf("build overlays %s: %w", ov.Name, err)
		}
	}
	for _, r := range cur.Resources() {
		if others[r.OrgId()] {
			if err := cur.Remove(r.CurId()); err != nil {
				return nil, err
			}
		}
	}
	if res.YAML, err = cur.AsYaml(); err != nil {
		return nil, err
	}
	if res.Final, err = deployments(cur); err != nil {
		return nil, err
	}
	return res, nil
}

// buildWithComponents runs kustomize on the overlay in mem with the
// components written as gotk-components.yaml: no plugins, no remote
// resources (refused when the overlay was loaded), confined to mem.
func buildWithComponents(mem filesys.FileSystem, components []byte) (resmap.ResMap, error) {
	if err := mem.WriteFile(path.Join("/", ComponentsFile), components); err != nil {
		return nil, err
	}
	o := krusty.MakeDefaultOptions()
	o.PluginConfig = types.DisabledPluginConfig()
	m, err := krusty.MakeKustomizer(o).Run(mem, "/")
	if err != nil {
		return nil, err
	}
	m.RemoveBuildAnnotations()
	return m, nil
}

// loadResources reads one resource of a kustomization in mem as kustomize
// does: a directory is built, a file read.
func loadResources(mem filesys.FileSystem, rf *resmap.Factory, p string) (resmap.ResMap, error) {
	abs := path.Join("/", p)
	if mem.IsDir(abs) {
		o := krusty.MakeDefaultOptions()
		o.PluginConfig = types.DisabledPluginConfig()
		m, err := krusty.MakeKustomizer(o).Run(mem, abs)
		if err != nil {
			return nil, err
		}
		m.RemoveBuildAnnotations()
		return m, nil
	}
	data, err := mem.ReadFile(abs)
	if err != nil {
		return nil, err
	}
	return rf.NewResMapFromBytes(data)
}

// splitChanged separates the objects a patch changed into the controllers'
// and the others' (by their id in before).
func splitChanged(ids []string, before resmap.ResMap, others map[resid.ResId]bool) (controllers, sync []string) {
	if len(others) == 0 {
		return ids, nil
	}
	other := map[string]bool{}
	for _, r := range before.Resources() {
		if others[r.OrgId()] {
			other[idString(r.CurId().Kind, r.GetNamespace(), r.GetName())] = true
		}
	}
	for _, id := range ids {
		if other[id] {
			sync = append(sync, id)
		} else {
			controllers = append(controllers, id)
		}
	}
	return controllers, sync
}

// transform applies one patch to m in place.
func transform(h *resmap.PluginHelpers, p types.Patch, m resmap.ResMap) error {
	cfg, err := yaml.Marshal(p)
	if err != nil {
		return err
	}
	t := builtins.NewPatchTransformerPlugin()
	if err := t.Config(h, cfg); err != nil {
		return err
	}
	if err := t.Transform(m); err != nil {
		return err
	}
	// kustomize's bookkeeping annotations are not part of the output, nor
	// a change.
	m.RemoveBuildAnnotations()
	return nil
}

// targets are the objects a patch with a target can change: kustomize's
// patch transformer applies it to exactly what the target selects. Nil
// (compare every object) for a patch without a target, or a selector that
// does not parse (the transform reported that already).
func targets(m resmap.ResMap, p types.Patch) map[resid.ResId]bool {
	if p.Target == nil {
		return nil
	}
	sel, err := m.Select(*p.Target)
	if err != nil {
		return nil
	}
	out := map[resid.ResId]bool{}
	for _, r := range sel {
		out[r.OrgId()] = true
	}
	return out
}

// changed lists the objects whose content differs between two resmaps,
// including objects a patch renamed. Content is compared as data, so a patch
// that only reformats (a JSON-6902 replace with the same value) is a no-op.
// When only is set, the content of other objects is not compared (each is
// serialised twice: the render's largest cost); renames still are.
func changed(before, after resmap.ResMap, only map[resid.ResId]bool) ([]string, error) {
	var out []string
	for _, r := range after.Resources() {
		id := idString(r.CurId().Kind, r.GetNamespace(), r.GetName())
		prev, err := before.GetById(r.OrgId())
		if err != nil || r.CurId() != prev.CurId() {
			out = append(out, id)
			continue
		}
		if only != nil && !only[r.OrgId()] {
			continue
		}
		a, err := r.MarshalJSON()
		if err != nil {
			return nil, err
		}
		b, err := prev.MarshalJSON()
		if err != nil {
			return nil, err
		}
		if !jsonEqual(a, b) {
			out = append(out, id)
		}
	}
	return out, nil
}

// jsonEqual compares two JSON documents as data: key order and number
// formatting (1 vs 1.0) do not count.
func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
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

// copyFS copies the overlay's files to the root of mem.
func copyFS(src fs.FS, mem filesys.FileSystem) error {
	return fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := path.Join("/", p)
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
