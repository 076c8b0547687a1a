package fluxrepo

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	fluxkustomize "github.com/fluxcd/pkg/kustomize"
	securefs "github.com/fluxcd/pkg/kustomize/filesys"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/resource"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/internal/gate"
	"github.com/homelab-ops/bootstrap/internal/input"
)

// Load builds the environment o.Path of o.Repo and every Kustomization it
// declares, transitively. Input errors (gate.InputError, exit 2): a missing
// repository or path, no kustomization file at the root, a kustomize build
// error, a spec.path that escapes the repository or does not exist — each
// naming the Kustomization and path. Paths that cannot be built for other
// reasons (another source, a variable in spec.path, a remote base) are
// recorded in Kustomization.Note and Env.Notes.
func Load(o Options) (*Env, error) {
	o.Namespace = fluxobj.NamespaceOr(o.Namespace, fluxobj.DefaultNamespace)
	if o.RootName == "" {
		o.RootName = fluxobj.DefaultRootName
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	repo, err := filepath.Abs(o.Repo)
	if err != nil {
		return nil, gate.InputErrorf("--repo %s: %w", o.Repo, err)
	}
	if st, err := os.Stat(repo); err != nil || !st.IsDir() {
		return nil, gate.InputErrorf("--repo %s: not a directory: pass the GitOps repository's checkout", o.Repo)
	}
	root := cleanPath(o.Path)
	if !isLocal(root) {
		return nil, gate.InputErrorf("--path %s: must be a directory inside --repo, e.g. clusters/dev", o.Path)
	}
	if st, err := os.Stat(filepath.Join(repo, filepath.FromSlash(root))); err != nil || !st.IsDir() {
		return nil, gate.InputErrorf("%s: no such directory in the repository %s: pass --env NAME for clusters/NAME, or --path%s", o.Path, repo,
			siblings(filepath.Dir(filepath.Join(repo, filepath.FromSlash(root)))))
	}
	if err := checkKustomizationFile(repo, o.Repo, root); err != nil {
		return nil, err
	}
	if !o.GenerateRoot && !hasKustomizationFile(filepath.Join(repo, filepath.FromSlash(root))) {
		return nil, gate.InputErrorf("%s has no kustomization.yaml: the cluster root must list its resources (sync.yaml, cluster-vars, the Kustomizations)", root)
	}

	tmp, err := os.MkdirTemp("", "fluxrepo-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	// kustomize resolves symlinks in the paths it reads (a symlinked
	// $TMPDIR, macOS's /var): the files a build read are recorded relative
	// to the resolved copy.
	if real, err := filepath.EvalSymlinks(tmp); err == nil {
		tmp = real
	}
	notes, err := copyRepo(repo, tmp, o.MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("copy %s: %w", repo, err)
	}
	e := &Env{Options: o, Repo: repo, Data: map[string]*Data{}, Notes: notes, index: &fileIndex{root: tmp}}
	e.index.load() // before the generator writes anything
	l := &loader{env: e, tmp: tmp, copyNotes: notes, seen: map[string]bool{}, plainSchema: !upstreamBuildOnly && !setsOpenAPI(tmp)}
	return e, l.run(root)
}

// upstreamBuildOnly makes every build use fluxkustomize.Build (tests).
var upstreamBuildOnly = false

type loader struct {
	env *Env
	tmp string
	// copyNotes are what the copy left out: the files a build error may be
	// explained by (the env's notes also hold later findings).
	copyNotes []string
	seen      map[string]bool
	// plainSchema: no kustomization of the repository sets openapi:, so
	// every build sees kustomize's built-in schema (see build).
	plainSchema bool
}

// run builds the root directory, then every Kustomization path the builds
// declare, in the order they are found.
func (l *loader) run(root string) error {
	e, o := l.env, l.env.Options
	res, files, appliedBy, err := l.buildRoot(root)
	if err != nil {
		return err
	}
	e.RootResources, e.RootFiles = res, files
	queue, err := l.ingest(res, files, appliedBy)
	if err != nil {
		return err
	}
	e.Root = e.Kustomization(o.Namespace, o.RootName)
	if e.Root != nil {
		i := slices.Index(e.Kustomizations, e.Root)
		e.Kustomizations = slices.Insert(slices.Delete(e.Kustomizations, i, i+1), 0, e.Root)
	}
	sourceKey := "GitRepository/" + o.Namespace + "/" + o.RootName
	if e.Root != nil {
		sourceKey = e.Root.SourceKey()
		if appliedBy != "" {
			e.Root.Built, e.Root.Resources, e.Root.Files, e.Root.Path = true, res, files, root
		}
	}
	for i := 0; i < len(queue); i++ {
		k := queue[i]
		if k.Built {
			continue
		}
		more, err := l.buildChild(k, sourceKey)
		if err != nil {
			return err
		}
		queue = append(queue, more...)
	}
	if e.Root != nil {
		for _, g := range e.GitRepositories {
			if "GitRepository/"+g.Namespace+"/"+g.Name == sourceKey {
				e.Source = g
			}
		}
	}
	return nil
}

// buildRoot builds the environment's root directory as the controller
// would: after the root GitRepository's spec.ignore, and with the root
// Kustomization's own spec when it applies this directory (appliedBy is
// then its namespace/name, else "").
func (l *loader) buildRoot(root string) (res []*resource.Resource, files []string, appliedBy string, err error) {
	e, o := l.env, l.env.Options
	res, files, err = l.build(root, nil)
	if err != nil {
		return nil, nil, "", gate.InputErrorf("kustomize build %s: %w%s", root, l.inRepo(err), leftOut(l.copyNotes))
	}
	// The root Kustomization, if the root directory renders it, is built
	// again with its own spec (patches, images, targetNamespace …) when it
	// applies this directory, as the controller would.
	var rootObj map[string]any
	for _, r := range res {
		if isKustomization(r) && r.GetName() == o.RootName && fluxobj.NamespaceOr(r.GetNamespace(), o.Namespace) == o.Namespace {
			if rootObj, err = r.Map(); err != nil {
				return nil, nil, "", gate.InputErrorf("%s: Kustomization %s: %w", root, o.RootName, err)
			}
		}
	}
	// The root's GitRepository may exclude files from its artifact.
	if ig := l.specIgnore(res); ig != nil {
		if err := applySpecIgnore(l.tmp, *ig); err != nil {
			return nil, nil, "", fmt.Errorf("spec.ignore: %w", err)
		}
		l.env.index = &fileIndex{root: l.tmp}
		l.env.index.load()
		e.Notes = append(e.Notes, "the root's GitRepository spec.ignore was applied to the copy")
		if res, files, err = l.build(root, nil); err != nil {
			return nil, nil, "", gate.InputErrorf("kustomize build %s (after the GitRepository's spec.ignore): %w", root, l.inRepo(err))
		}
	}
	if rootObj != nil {
		p, _, _ := unstructured.NestedString(rootObj, "spec", "path")
		if cleanPath(p) == root {
			if res, files, err = l.build(root, rootObj); err != nil {
				return nil, nil, "", gate.InputErrorf("kustomize build %s (with the spec of Kustomization %s/%s): %w", root, o.Namespace, o.RootName, l.inRepo(err))
			}
			appliedBy = o.Namespace + "/" + o.RootName
		}
	}
	return res, files, appliedBy, nil
}

// buildChild builds the path of Kustomization k, which the walk reached,
// and returns the Kustomizations its build declares. A path that is not
// built (another source, a variable, remote bases) is noted on k; one that
// fails to build ends Load unless KeepGoing.
func (l *loader) buildChild(k *Kustomization, sourceKey string) ([]*Kustomization, error) {
	e := l.env
	// The controller joins spec.path to the artifact root securely: a
	// leading "/" is relative to the root.
	k.Path = cleanPath(strings.TrimLeft(k.Spec.Path, "/"))
	switch {
	case k.SourceKey() != sourceKey:
		k.Note = fmt.Sprintf("reads %s, not the root's source %s: its path is not in this repository and was not built", k.SourceKey(), sourceKey)
	case strings.Contains(k.Spec.Path, "${"):
		k.Note = fmt.Sprintf("spec.path %q uses a substitution variable: not built", k.Spec.Path)
	case !isLocal(k.Path) && k.Path != ".":
		// Always refused, also with KeepGoing: a path out of the
		// repository is never what the author meant.
		return nil, gate.InputErrorf("Kustomization %s (%s): spec.path %q leaves the repository (kustomize-controller would clamp it into the repository root): make it relative to the repository root, e.g. ./apps", k.Ref(), k.Location, k.Spec.Path)
	}
	if k.Note != "" {
		e.Notes = append(e.Notes, fmt.Sprintf("Kustomization %s (%s): %s", k.Ref(), k.Location, k.Note))
		return nil, nil
	}
	dir := filepath.Join(l.tmp, filepath.FromSlash(k.Path))
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, l.childFailed(k, gate.InputErrorf("Kustomization %s (%s): spec.path %q is not a directory of the repository: kustomize-controller fails it with 'kustomization path not found'", k.Ref(), k.Location, k.Spec.Path))
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(k.Kustomization)
	if err != nil {
		return nil, err
	}
	res, files, err := l.build(k.Path, obj)
	if err != nil {
		if remote := remoteRefs(l.tmp, dir); len(remote) > 0 {
			k.Note = fmt.Sprintf("path %s has remote bases (%s): not built offline", k.Path, strings.Join(remote, ", "))
			e.Notes = append(e.Notes, fmt.Sprintf("Kustomization %s (%s): %s", k.Ref(), k.Location, k.Note))
			return nil, nil
		}
		return nil, l.childFailed(k, gate.InputErrorf("Kustomization %s (%s): kustomize build of spec.path %q failed: %w%s", k.Ref(), k.Location, k.Spec.Path, l.inRepo(err), leftOut(l.copyNotes)))
	}
	k.Built, k.Resources, k.Files = true, res, files
	return l.ingest(res, files, k.Ref())
}

// childFailed records that Kustomization k's path does not build: with
// KeepGoing it is noted (Built false, Err set) and the walk goes on;
// otherwise err ends Load.
func (l *loader) childFailed(k *Kustomization, err error) error {
	if !l.env.Options.KeepGoing {
		return err
	}
	k.Err, k.Note = err, "not built: "+err.Error()
	l.env.Notes = append(l.env.Notes, k.Note)
	return nil
}

// inRepo names the private copy's paths in a build error as paths of the
// repository.
func (l *loader) inRepo(err error) error {
	return errors.New(strings.ReplaceAll(err.Error(), l.tmp+string(filepath.Separator), ""))
}

// specIgnore is spec.ignore of the root's GitRepository in res, if set.
func (l *loader) specIgnore(res []*resource.Resource) *string {
	o := l.env.Options
	kind, ns, name := sourcev1.GitRepositoryKind, o.Namespace, o.RootName
	for _, r := range res {
		if isKustomization(r) && r.GetName() == o.RootName && fluxobj.NamespaceOr(r.GetNamespace(), o.Namespace) == o.Namespace {
			k := &kustomizev1.Kustomization{}
			if fromResource(r, k) == nil {
				k.Namespace = fluxobj.NamespaceOr(k.Namespace, o.Namespace)
				src := fluxobj.KustomizationSource(k)
				kind, ns, name = src.Kind, src.Namespace, src.Name
			}
		}
	}
	for _, r := range res {
		if r.GetKind() == kind && kind == sourcev1.GitRepositoryKind && r.GetName() == name && fluxobj.NamespaceOr(r.GetNamespace(), o.Namespace) == ns {
			g := &sourcev1.GitRepository{}
			if fromResource(r, g) == nil && g.Spec.Ignore != nil {
				return g.Spec.Ignore
			}
		}
	}
	return nil
}

// ingest records the Flux objects and data of a build and returns the new
// Kustomizations.
func (l *loader) ingest(res []*resource.Resource, files []string, appliedBy string) ([]*Kustomization, error) {
	e, o := l.env, l.env.Options
	var out []*Kustomization
	for _, r := range res {
		ns := fluxobj.NamespaceOr(r.GetNamespace(), o.Namespace)
		kind := r.GetKind()
		switch {
		case isKustomization(r):
			k := &kustomizev1.Kustomization{}
			if err := fromResource(r, k); err != nil {
				return nil, gate.InputErrorf("Kustomization %s/%s (%s): %w", ns, r.GetName(), e.Locate(files, kind, ns, r.GetName()), err)
			}
			k.Namespace = ns
			ref := ns + "/" + k.Name
			loc := e.Locate(files, kind, ns, k.Name)
			if l.seen["K/"+ref] {
				if old := e.Kustomization(ns, k.Name); old.AppliedBy == "" && appliedBy != "" {
					// Rendered by the root directory and applied by a Kustomization.
					old.AppliedBy = appliedBy
					continue
				}
				e.Notes = append(e.Notes, fmt.Sprintf("Kustomization %s is rendered again (%s, applied by %s): the first one is kept", ref, loc, orCLI(appliedBy)))
				continue
			}
			l.seen["K/"+ref] = true
			kk := &Kustomization{Kustomization: k, Location: loc, AppliedBy: appliedBy}
			e.Kustomizations = append(e.Kustomizations, kk)
			out = append(out, kk)
		case kind == sourcev1.GitRepositoryKind && fluxobj.IsSource(r.GetApiVersion(), kind):
			g := &sourcev1.GitRepository{}
			if err := fromResource(r, g); err != nil {
				return nil, gate.InputErrorf("GitRepository %s/%s (%s): %w", ns, r.GetName(), e.Locate(files, kind, ns, r.GetName()), err)
			}
			g.Namespace = ns
			if l.seen["G/"+ns+"/"+g.Name] {
				continue
			}
			l.seen["G/"+ns+"/"+g.Name] = true
			e.GitRepositories = append(e.GitRepositories, &GitRepository{GitRepository: g, Location: e.Locate(files, kind, ns, g.Name), AppliedBy: appliedBy})
		case (kind == "ConfigMap" || kind == "Secret") && r.GetApiVersion() == "v1":
			d := dataOf(r, ns)
			d.AppliedBy = appliedBy
			d.Location = e.Locate(files, kind, ns, d.Name)
			if old, ok := e.Data[d.Key()]; ok {
				if old.AppliedBy == "" && appliedBy != "" {
					old.AppliedBy = appliedBy
					continue
				}
				e.Notes = append(e.Notes, fmt.Sprintf("%s is rendered by %s and again by %s: the first is used", d.Key(), orCLI(old.AppliedBy), orCLI(appliedBy)))
				continue
			}
			e.Data[d.Key()] = d
		}
	}
	return out, nil
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

func orCLI(appliedBy string) string {
	if appliedBy == "" {
		return "the root directory"
	}
	return "Kustomization " + appliedBy
}

func dataOf(r *resource.Resource, ns string) *Data {
	m, _ := r.Map()
	d := &Data{Kind: r.GetKind(), Namespace: ns, Name: r.GetName(), Values: map[string]string{}}
	_, d.Encrypted = m["sops"]
	for _, field := range []string{"data", "stringData"} {
		vals, _, _ := unstructured.NestedMap(m, field)
		for k, v := range vals {
			s := fmt.Sprint(v)
			switch {
			case d.Encrypted || strings.HasPrefix(s, "ENC["):
				s = "<encrypted>"
			case d.Kind == "Secret" && field == "data":
				b, err := base64.StdEncoding.DecodeString(s)
				if err != nil {
					s = "<undecodable>"
				} else {
					s = string(b)
				}
			}
			d.Values[k] = s
		}
	}
	return d
}

func fromResource(r *resource.Resource, into any) error {
	m, err := r.Map()
	if err != nil {
		return err
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(m, into)
}

func isKustomization(r *resource.Resource) bool {
	return fluxobj.IsKustomization(r.GetApiVersion(), r.GetKind())
}

// siblings lists the environments next to a missing one, for the message.
func siblings(parent string) string {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return ""
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return ""
	}
	return " (" + filepath.Base(parent) + "/ has " + strings.Join(names, ", ") + ")"
}

// checkKustomizationFile holds the root's kustomization file, if there is
// one, to the input rule (inside the repository, regular, bounded), so a
// link to a device is named rather than taken for a missing file.
func checkKustomizationFile(repo, label, root string) error {
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		rel := path.Join(root, n)
		if _, err := os.Lstat(filepath.Join(repo, filepath.FromSlash(rel))); err != nil {
			continue
		}
		rd, err := input.OpenDir(repo, "--repo "+label)
		if err != nil {
			return err
		}
		defer rd.Close()
		return rd.Check(rel)
	}
	return nil
}

func hasKustomizationFile(dir string) bool {
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		if st, err := os.Stat(filepath.Join(dir, n)); err == nil && st.Mode().IsRegular() {
			return true
		}
	}
	return false
}

// build runs the controller's generator on dir (relative) of the private
// copy, then kustomize confined to the copy with no plugins and no remote
// bases, then restores dir. It returns the resources and the files read.
func (l *loader) build(dir string, obj map[string]any) ([]*resource.Resource, []string, error) {
	abs := filepath.Join(l.tmp, filepath.FromSlash(dir))
	if obj == nil {
		obj = map[string]any{}
	}
	action, err := fluxkustomize.NewGenerator(l.tmp, unstructured.Unstructured{Object: obj}).WriteFile(abs, fluxkustomize.WithSaveOriginalKustomization())
	if err != nil {
		return nil, nil, fmt.Errorf("generate kustomization.yaml: %w", err)
	}
	defer fluxkustomize.CleanDirectory(abs, action) //nolint:errcheck // the copy is removed anyway
	fsys, err := securefs.MakeFsOnDiskSecure(l.tmp)
	if err != nil {
		return nil, nil, err
	}
	rec := &recordingFS{FileSystem: fsys, root: l.tmp, read: map[string]bool{}}
	var m resmap.ResMap
	if l.plainSchema {
		m, err = buildBuiltinSchema(rec, abs)
	} else {
		m, err = fluxkustomize.Build(rec, abs)
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
	return res, files, nil
}

// buildBuiltinSchema is fluxkustomize.Build (krusty with no load
// restrictions and plugins disabled, panics recovered) without its reset
// of kustomize's global OpenAPI schema before and after every build. The
// reset only matters when a kustomization sets openapi: (the one way a
// build changes that global); Load checks that none does, else it uses
// fluxkustomize.Build. Re-parsing the built-in schema is more than half the
// time of checking a large repository (BenchmarkLoad: 0.12× of upstream's
// time on 101 Kustomizations; docs/benchmarks.md, "The forks"). Builds
// here are sequential.
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

// setsOpenAPI says whether a kustomization file under dir has an openapi: field.
func setsOpenAPI(dir string) bool {
	found := false
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
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

// recordingFS records the files a build reads.
type recordingFS struct {
	filesys.FileSystem
	root string
	read map[string]bool
}

func (f *recordingFS) ReadFile(p string) ([]byte, error) {
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
