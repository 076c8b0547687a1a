// Package sync is step 3: build an environment's cluster root
// (clusters/<env>) in-process with kustomize, as kustomize-controller would,
// gate it, server-side apply it with step 1's machinery, optionally pointing
// the GitRepository at a temporary source for a cold bring-up, and prove
// the root reconciled at the source's artifact revision. Cutover moves a
// temporarily-sourced cluster to its final source.
package rootsync

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/kyaml/kio"

	"github.com/homelab-ops/bootstrap/pkg/apply"
	"github.com/homelab-ops/bootstrap/pkg/gate"
	"github.com/homelab-ops/bootstrap/pkg/input"
)

// Phase is this package's phase name in reports.
const Phase = "sync"

// Options select what to build.
type Options struct {
	// Repo is the GitOps repository's root directory.
	Repo string
	// Path is the root kustomization inside Repo, e.g. clusters/dev.
	Path string
	// Namespace and RootName name the root Kustomization (flux-system/flux-system).
	Namespace, RootName string
}

// Render is the built root: its objects, the Flux Kustomizations among
// them, the root and its GitRepository.
type Render struct {
	Options        Options
	YAML           []byte
	Objects        []*unstructured.Unstructured
	Kustomizations []*kustomizev1.Kustomization
	// Root is nil when the render lacks it (a before-gate fails).
	Root *kustomizev1.Kustomization
	// Source is the root's GitRepository object in the render (nil when absent).
	Source *unstructured.Unstructured
}

// Build runs kustomize on Repo/Path the way kustomize-controller does
// (a filesystem confined to the repository, no plugins, no remote bases).
// A missing repository or path is an input error.
func Build(o Options) (*Render, error) {
	repo, err := filepath.Abs(o.Repo)
	if err != nil {
		return nil, gate.InputErrorf("--repo %s: %w", o.Repo, err)
	}
	clean := filepath.Clean(filepath.FromSlash(o.Path))
	if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return nil, gate.InputErrorf("--path %s: must be relative to --repo and inside it, e.g. clusters/dev", o.Path)
	}
	dir := filepath.Join(repo, clean)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, gate.InputErrorf("%s: no such directory in the repository %s: pass --env NAME for clusters/NAME, or --path", o.Path, repo)
	}
	found := false
	for _, n := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
			if err := checkIn(repo, filepath.Join(clean, n)); err != nil {
				return nil, err
			}
			found = true
		}
	}
	if !found {
		return nil, gate.InputErrorf("%s has no kustomization.yaml: the cluster root must list its resources (sync.yaml, cluster-vars, the Kustomizations)", o.Path)
	}
	res, err := input.KustomizeBuild(repo, dir)
	if err != nil {
		return nil, gate.InputErrorf("kustomize build %s: %w%s", o.Path, err, input.BuildFix(err, o.Repo))
	}
	y, err := res.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", o.Path, err)
	}
	objs, err := apply.ReadObjects(y)
	if err != nil {
		return nil, gate.InputErrorf("%s: %w", o.Path, err)
	}
	r := &Render{Options: o, YAML: y, Objects: objs}
	for _, u := range objs {
		switch {
		case u.GetKind() == kustomizev1.KustomizationKind && strings.HasPrefix(u.GetAPIVersion(), kustomizev1.GroupVersion.Group+"/"):
			k := &kustomizev1.Kustomization{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, k); err != nil {
				return nil, gate.InputErrorf("%s: Kustomization %s/%s: %w", o.Path, u.GetNamespace(), u.GetName(), err)
			}
			if k.Namespace == "" {
				k.Namespace = o.Namespace
			}
			r.Kustomizations = append(r.Kustomizations, k)
			if k.Name == o.RootName && k.Namespace == o.Namespace {
				r.Root = k
			}
		}
	}
	if r.Root != nil {
		ref := r.Root.Spec.SourceRef
		ns := ref.Namespace
		if ns == "" {
			ns = r.Root.Namespace
		}
		for _, u := range objs {
			if u.GetKind() == ref.Kind && u.GetName() == ref.Name && namespaceOr(u.GetNamespace(), o.Namespace) == ns &&
				strings.HasPrefix(u.GetAPIVersion(), sourcev1.GroupVersion.Group+"/") {
				r.Source = u
			}
		}
	}
	return r, nil
}

// checkIn holds a file of the repository to the input rule (inside it,
// regular, bounded) before kustomize reads it.
func checkIn(repo, rel string) error {
	rd, err := input.OpenDir(repo, "--repo "+repo)
	if err != nil {
		return err
	}
	defer rd.Close()
	return rd.Check(filepath.ToSlash(rel))
}

func namespaceOr(ns, def string) string {
	if ns == "" {
		return def
	}
	return ns
}

// Locate lists the files of the repository (relative, slash-separated)
// that declare an object of kind with name, so gate messages can name the
// file to fix. Unparseable files are skipped: kustomize already reported them.
func Locate(repo, kind, name string) []string {
	var out []string
	rd, err := input.OpenDir(repo, "--repo "+repo)
	if err != nil {
		return nil
	}
	defer rd.Close()
	_ = filepath.WalkDir(repo, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(p); ext != ".yaml" && ext != ".yml" {
			return nil
		}
		rel, err := filepath.Rel(repo, p)
		if err != nil {
			return nil
		}
		b, err := rd.ReadFile(filepath.ToSlash(rel))
		if err != nil || !bytes.Contains(b, []byte(name)) {
			return nil
		}
		nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(b), OmitReaderAnnotations: true}).Read()
		if err != nil {
			return nil
		}
		for _, n := range nodes {
			if n.GetKind() == kind && n.GetName() == name {
				out = append(out, filepath.ToSlash(rel))
				break
			}
		}
		return nil
	})
	slices.Sort(out)
	return out
}

// where names the files declaring an object, for messages: the files of
// other environments (siblings of path that path's kustomization does not
// reference) are left out.
func where(repo, path, kind, name string) string {
	var files []string
	parent := filepath.ToSlash(filepath.Dir(filepath.Clean(path)))
	self := filepath.Base(filepath.Clean(path))
	var kus []byte
	if rd, err := input.OpenDir(repo, "--repo "+repo); err == nil {
		kus, _ = rd.ReadFile(filepath.ToSlash(filepath.Join(path, "kustomization.yaml")))
		_ = rd.Close()
	}
	for _, f := range Locate(repo, kind, name) {
		rest, ok := strings.CutPrefix(f, parent+"/")
		if ok && parent != "." {
			sib, _, nested := strings.Cut(rest, "/")
			if nested && sib != self && !bytes.Contains(kus, []byte("../"+sib)) {
				continue
			}
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return "(file not found under the repository)"
	}
	return strings.Join(files, ", ")
}
