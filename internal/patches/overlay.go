// Package patches applies controller overlays to the rendered Flux
// components with the kustomize api, and proves each patch landed: every
// patch changed something, no generated container arg was lost, and the
// controllers' effective flags hold the invariants this tool exists for.
package patches

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"

	"github.com/homelab-ops/bootstrap/internal/gate"
)

// Overlay is a kustomization over the generated components. Two forms: one
// that lists only patches (the tool supplies the components as its
// resources), and Flux's documented "customize Flux manifests" form, whose
// resources name gotk-components.yaml (the tool writes exactly that file
// from the render) beside local patch files and resources.
type Overlay struct {
	// Name is where the overlay came from, for messages.
	Name    string
	fsys    fs.FS
	file    string
	Patches []types.Patch
	// Components is true for the documented form: the kustomization itself
	// is built, with the render as gotk-components.yaml.
	Components bool
}

// ComponentsFile is the file the documented form's resources name: `flux
// install --export`'s output, supplied from the render.
const ComponentsFile = "gotk-components.yaml"

// allowedKeys are the top-level fields an overlay kustomization may set.
var allowedKeys = []string{"apiVersion", "kind", "patches", "resources", "patchesStrategicMerge", "patchesJson6902", "images"}

// LoadOverlay reads the overlay kustomization at the root of fsys. A
// directory with no files at all is an overlay with no patches.
func LoadOverlay(fsys fs.FS, name string) (*Overlay, error) {
	ov := &Overlay{Name: name, fsys: fsys}
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, gate.InputErrorf("overlays %s: %w", name, err)
	}
	for _, e := range entries {
		if slices.Contains(konfig.RecognizedKustomizationFileNames(), e.Name()) {
			ov.file = e.Name()
			break
		}
	}
	if ov.file == "" {
		if len(entries) == 0 {
			return ov, nil
		}
		return nil, gate.InputErrorf("overlays %s has files but no kustomization.yaml; add one listing `patches:`, or pass an empty directory for no patches", name)
	}
	where := name + "/" + ov.file
	data, err := fs.ReadFile(fsys, ov.file)
	if gate.IsInput(err) {
		return nil, err
	}
	if err != nil {
		return nil, gate.InputErrorf("read %s: %w", where, err)
	}
	var top map[string]any
	if err := yaml.Unmarshal(data, &top); err != nil {
		return nil, gate.InputErrorf("%s is not valid YAML: %w", where, err)
	}
	for k := range top {
		if !slices.Contains(allowedKeys, k) {
			return nil, gate.InputErrorf("%s: field %q is not supported in an overlay; only %s (the tool supplies the Flux components)",
				where, k, strings.Join(allowedKeys, ", "))
		}
	}
	var k types.Kustomization
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		return nil, gate.InputErrorf("%s: %w", where, err)
	}
	if err := ov.resources(where, k); err != nil {
		return nil, err
	}
	// The older patch fields are patches too; each is proven on its own.
	for _, smp := range k.PatchesStrategicMerge {
		// As kustomize reads it: a file of the directory, else an inline patch.
		p := types.Patch{Patch: string(smp)}
		if _, err := fs.Stat(fsys, string(smp)); err == nil {
			p = types.Patch{Path: string(smp)}
		}
		k.Patches = append(k.Patches, p)
	}
	k.Patches = append(k.Patches, k.PatchesJson6902...)
	if len(k.Images) > 0 && !ov.Components {
		return nil, gate.InputErrorf("%s: images: needs the documented form (resources: [%s]) so the kustomization itself is built", where, ComponentsFile)
	}
	for i, p := range k.Patches {
		if (p.Path == "") == (p.Patch == "") {
			return nil, gate.InputErrorf("%s: patches[%d] needs exactly one of path or patch", where, i)
		}
		if p.Path != "" {
			if _, err := fs.Stat(fsys, p.Path); err != nil {
				return nil, gate.InputErrorf("%s: patches[%d] path %s: %w", where, i, p.Path, errors.Unwrap(err))
			}
		}
	}
	ov.Patches = k.Patches
	return ov, nil
}

// resources checks the documented form's resources: gotk-components.yaml
// must be one of them (else the overlay would apply something else), and
// every other one a file or directory inside the overlay directory.
func (ov *Overlay) resources(where string, k types.Kustomization) error {
	if len(k.Resources) == 0 {
		return nil
	}
	if !slices.Contains(k.Resources, ComponentsFile) && !slices.Contains(k.Resources, "./"+ComponentsFile) {
		return gate.InputErrorf("%s: resources must include %s (the Flux components this tool renders); without it the overlay would apply something else", where, ComponentsFile)
	}
	for _, r := range k.Resources {
		clean := path.Clean(r)
		switch {
		case clean == ComponentsFile:
			if _, err := fs.Stat(ov.fsys, ComponentsFile); err == nil {
				return gate.InputErrorf("%s: %s exists in the overlay directory; remove it: the tool writes it from the render (an old export would be applied otherwise)", where, ComponentsFile)
			}
		case strings.Contains(r, "://") || strings.HasPrefix(r, "github.com/") || strings.Contains(r, "?ref="):
			return gate.InputErrorf("%s: resource %s is remote; an overlay may only use files inside its directory", where, r)
		case !fs.ValidPath(clean):
			return gate.InputErrorf("%s: resource %s is outside the overlay directory", where, r)
		default:
			if _, err := fs.Stat(ov.fsys, clean); err != nil {
				return gate.InputErrorf("%s: resource %s: %v", where, r, errors.Unwrap(err))
			}
		}
	}
	ov.Components = true
	return nil
}

// describe names a patch for messages: its position, file and target.
func (ov *Overlay) describe(i int) (name, target string) {
	p := ov.Patches[i]
	src := "inline"
	body := p.Patch
	if p.Path != "" {
		src = p.Path
		if b, err := fs.ReadFile(ov.fsys, p.Path); err == nil {
			body = string(b)
		}
	}
	name = fmt.Sprintf("%s patches[%d] (%s)", ov.file, i, src)
	if p.Target != nil {
		return name, selectorString(p.Target)
	}
	// A strategic-merge patch without a target names its object itself.
	var meta struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal([]byte(body), &meta); err == nil && meta.Kind != "" {
		return name, joinNonEmpty("/", meta.Kind, meta.Metadata.Namespace, meta.Metadata.Name)
	}
	return name, "(no target)"
}

func selectorString(s *types.Selector) string {
	parts := []string{joinNonEmpty("/", s.Kind, s.Namespace, s.Name)}
	if s.Group != "" || s.Version != "" {
		parts = append(parts, "apiVersion="+joinNonEmpty("/", s.Group, s.Version))
	}
	if s.LabelSelector != "" {
		parts = append(parts, "labels="+s.LabelSelector)
	}
	if s.AnnotationSelector != "" {
		parts = append(parts, "annotations="+s.AnnotationSelector)
	}
	return joinNonEmpty(" ", parts...)
}

func joinNonEmpty(sep string, parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, sep)
}
