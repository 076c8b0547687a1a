package fluxrepo

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	fluxkustomize "github.com/fluxcd/pkg/kustomize"
	securefs "github.com/fluxcd/pkg/kustomize/filesys"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/resource"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// build runs the controller's generator on dir (relative) of the private
// copy, then kustomize confined to the copy with no plugins and no remote
// bases, then restores dir. It returns the resources and the files read.
func (l *loader) build(dir string, obj map[string]any) ([]*resource.Resource, []string, error) {
	return l.buildIn(l.tmp, dir, obj)
}

// buildIn is build with root as the artifact's root (the copy, or an
// ExternalArtifact staged). A build of the copy the walk started ahead
// (ahead.go) is taken instead of built again. A failed build stops the
// builds ahead first: a repair (buildRepaired) may change the copy next.
func (l *loader) buildIn(root, dir string, obj map[string]any) (res []*resource.Resource, files []string, err error) {
	if obj == nil {
		obj = map[string]any{}
	}
	if l.ahead != nil {
		defer func() {
			if err != nil {
				l.ahead.drain()
				if l.cache != nil {
					l.cache.done(false) // as the build's own buildFS does
				}
			}
		}()
		if root == l.tmp {
			if res, files, err, ok := l.ahead.take(filepath.ToSlash(dir), obj); ok {
				return res, files, err
			}
		}
	}
	return l.buildCopy(root, dir, obj, false)
}

// buildCopy builds dir of root. ahead: a build ahead of its turn
// (ahead.go), run beside others while the copy is as committed: it always
// uses the cache and leaves the cache's state (done) to the walk.
func (l *loader) buildCopy(root, dir string, obj map[string]any, ahead bool) (_ []*resource.Resource, _ []string, err error) {
	abs := filepath.Join(root, filepath.FromSlash(dir))
	var fsys filesys.FileSystem
	var action fluxkustomize.Action
	var bfs *buildFS
	if root == l.tmp && !upstreamBuildOnly && !l.env.Options.UpstreamBuild {
		// The copy: the generated kustomization file in memory, the
		// copy's files read once per load (fscache.go).
		if bfs, action, err = l.generated(root, abs, obj, ahead); err != nil {
			return nil, nil, err
		}
		fsys = bfs
		if ahead {
			bfs.use = bfs.cache != nil
		} else {
			defer func() { bfs.done(err == nil) }()
		}
	} else {
		// As kustomize-controller does: written, built, restored.
		action, err = fluxkustomize.NewGenerator(root, unstructured.Unstructured{Object: obj}).WriteFile(abs, fluxkustomize.WithSaveOriginalKustomization())
		if err != nil {
			return nil, nil, fmt.Errorf("generate kustomization.yaml: %w", err)
		}
		defer fluxkustomize.CleanDirectory(abs, action) //nolint:errcheck // the copy is removed anyway
		if fsys, err = securefs.MakeFsOnDiskSecure(root); err != nil {
			return nil, nil, err
		}
	}
	rec := &recordingFS{FileSystem: fsys, root: root, read: map[string]bool{}}
	if root == l.tmp {
		rec.refused = l.bombs
	}
	// Another load's build of the same inputs (reuse.go), or this one's
	// recorded for another load.
	var bfsys filesys.FileSystem = rec
	var q *queryFS
	var key buildKey
	if bfs != nil && l.plainSchema && l.reusable() {
		key = newBuildKey(root, dir, bfs, action)
		if b := l.env.Options.ReuseBuilds; b != nil {
			if res, files, ok := b.take(key, rec, root); ok {
				return res, files, nil
			}
		}
		if b := l.env.Options.RecordBuilds; b != nil {
			q = newQueryFS(rec, root)
			bfsys = q
			defer b.started(key)()
		}
	}
	var m resmap.ResMap
	if l.plainSchema {
		m, err = buildBuiltinSchema(bfsys, abs)
	} else {
		m, err = fluxkustomize.Build(bfsys, abs)
	}
	if err != nil {
		return nil, nil, err
	}
	res := m.Resources()
	for _, r := range res {
		if r.GetName() == "" || r.GetKind() == "" || r.GetApiVersion() == "" {
			return nil, nil, fmt.Errorf("failed to decode Kubernetes apiVersion, kind and name from: %v", r.String())
		}
	}
	files := slices.Sorted(maps.Keys(rec.read))
	// The generated kustomization.yaml is not a file of the repository.
	if action == fluxkustomize.CreatedAction {
		gen := filepath.ToSlash(filepath.Join(dir, konfig.DefaultKustomizationFileName()))
		files = slices.DeleteFunc(files, func(f string) bool { return f == gen })
	}
	if q != nil {
		l.env.Options.RecordBuilds.record(key, q, res, files)
	}
	return res, files, nil
}

// generated runs the controller's generator on abs (a directory of the
// copy) without writing: fluxcd/pkg/kustomize v1.35.6 Generator.WriteFile
// is GenerateManifest, then the write of its result to the file it names
// (the kustomization file found, or a new kustomization.yaml). The build's
// filesystem serves that result at that path (buildFS), as the disk would
// after the write.
func (l *loader) generated(root, abs string, obj map[string]any, ahead bool) (*buildFS, fluxkustomize.Action, error) {
	manifest, kfile, action, err := l.generateManifest(root, abs, obj)
	if err != nil {
		if l.cache != nil && !ahead {
			l.cache.done(false)
		}
		return nil, action, fmt.Errorf("generate kustomization.yaml: %w", err)
	}
	sec, err := securefs.MakeFsOnDiskSecure(root)
	if err != nil {
		return nil, action, err
	}
	if l.cache == nil && !ahead {
		l.cache = newFSCache()
	}
	return newBuildFS(sec, l.cache, kfile, manifest), action, nil
}

// buildBuiltinSchema is fluxkustomize.Build (krusty with no load
// restrictions and plugins disabled, panics recovered) without its reset
// of kustomize's global OpenAPI schema before and after every build. The
// reset only matters when a kustomization sets openapi: (the one way a
// build changes that global); Load checks that none does, else it uses
// fluxkustomize.Build. Re-parsing the built-in schema is more than half the
// time of checking a large repository (BenchmarkLoad: 0.12× of upstream's
// time on 101 Kustomizations; docs/benchmarks.md, "The forks"). Builds
// here run concurrently (ahead.go): the built-in schema, once initialised,
// is only read.
func buildBuiltinSchema(fsys filesys.FileSystem, dir string) (m resmap.ResMap, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("recovered from kustomize build panic: %v", r)
		}
	}()
	k := krusty.MakeKustomizer(&krusty.Options{
		LoadRestrictions: kustypes.LoadRestrictionsNone,
		PluginConfig:     kustypes.DisabledPluginConfig(),
	})
	return k.Run(fsys, dir)
}

// SetsOpenAPI says whether a load of dir builds with kustomize's schema
// swapped around each build (fluxkustomize.Build) rather than the
// built-in one: a kustomization file under dir (not under .git) has an
// openapi: field, or does not parse (the upstream build then decides).
// Such builds must not run beside another load's (bootstrap diff loads
// its revisions one after the other then).
func SetsOpenAPI(dir string) bool {
	found := false
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if err != nil || found || d.IsDir() || !slices.Contains(konfig.RecognizedKustomizationFileNames(), d.Name()) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		var k map[string]any
		if yaml.Unmarshal(b, &k) != nil {
			found = true // unreadable: let the upstream build decide
			return nil
		}
		_, found = k["openapi"]
		return nil
	})
	return found
}

// recordingFS records the files a build reads, and refuses those of
// refused (the copy's alias bombs, relative to root) with their error.
type recordingFS struct {
	filesys.FileSystem
	root    string
	read    map[string]bool
	refused map[string]error
}

func (f *recordingFS) ReadFile(p string) ([]byte, error) {
	if rel, rerr := filepath.Rel(f.root, p); rerr == nil && f.refused[filepath.ToSlash(rel)] != nil {
		return nil, f.refused[filepath.ToSlash(rel)]
	}
	b, err := f.FileSystem.ReadFile(p)
	if err == nil {
		if rel, rerr := filepath.Rel(f.root, p); rerr == nil && filepath.IsLocal(rel) {
			f.read[filepath.ToSlash(rel)] = true
		}
	}
	return b, err
}

// remoteRefs lists the remote resources and components of dir's
// kustomization file and of the local bases it includes, transitively
// (within root).
func remoteRefs(root, dir string) []string {
	var out []string
	seen := map[string]bool{}
	var visit func(dir string)
	visit = func(dir string) {
		if seen[dir] || len(seen) > 1000 {
			return
		}
		seen[dir] = true
		for _, n := range konfig.RecognizedKustomizationFileNames() {
			b, err := os.ReadFile(filepath.Join(dir, n))
			if err != nil {
				continue
			}
			var k kustypes.Kustomization
			if yaml.Unmarshal(b, &k) != nil {
				return
			}
			for _, r := range slices.Concat(k.Resources, k.Components) {
				if !fluxkustomize.IsLocalRelativePath(r) {
					out = append(out, r)
					continue
				}
				sub := filepath.Join(dir, filepath.FromSlash(r))
				if rel, err := filepath.Rel(root, sub); err == nil && filepath.IsLocal(rel) {
					if st, err := os.Stat(sub); err == nil && st.IsDir() {
						visit(sub)
					}
				}
			}
			return
		}
	}
	visit(dir)
	return out
}

// inRepo names the private copy's paths in a build error as paths of the
// repository.
func (l *loader) inRepo(err error) error {
	msg := strings.ReplaceAll(err.Error(), l.tmp+string(filepath.Separator), "")
	return errors.New(strings.ReplaceAll(msg, l.workspace+string(filepath.Separator), ""))
}

// leftOut lists the files left out of the copy, for build errors they may explain.
func leftOut(notes []string) string {
	var out []string
	for _, n := range notes {
		if strings.Contains(n, "left out") {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return " (files left out of the copy: " + strings.Join(out, "; ") + ")"
}
