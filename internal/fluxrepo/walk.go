package fluxrepo

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	fluxkustomize "github.com/fluxcd/pkg/kustomize"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/homelab-ops/bootstrap/internal/artifactgen"
	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// run builds the root directory, then every Kustomization path the builds
// declare, in the order they are found.
func (l *loader) run(root string) error {
	e := l.env
	if err := l.checkFluxInstance(); err != nil {
		return err
	}
	res, files, appliedBy, err := l.buildRoot(root)
	if err != nil {
		return err
	}
	e.RootResources, e.RootFiles = res, files
	e.Origin = Origin{Layout: LayoutRepository}
	// No root in the render: one declared outside it (a FluxInstance's
	// spec.sync, the flags) applies the root directory.
	// Where the render holds it, the flags would have no effect: refused,
	// not ignored.
	if slices.ContainsFunc(res, l.isRoot) && e.Options.Sync != nil {
		return verify.InputErrorf("--source-url declares the root, but %s renders it (Kustomization %s/%s): drop --source-kind, --source-url and --source-ref", root, e.Options.Namespace, e.Options.RootName)
	}
	if slices.ContainsFunc(res, l.isRoot) && e.Options.FluxInstance != "" {
		return verify.InputErrorf("--flux-instance %s has no effect: %s renders the root itself (Kustomization %s/%s), so no FluxInstance spec.sync declares it: drop --flux-instance", e.Options.FluxInstance, root, e.Options.Namespace, e.Options.RootName)
	}
	if !slices.ContainsFunc(res, l.isRoot) {
		if err := l.declaredRoot(root); err != nil {
			return err
		}
		if e.Root != nil {
			appliedBy = e.Root.Ref()
		}
	}
	if e.Root == nil && !slices.ContainsFunc(res, l.isRoot) && e.Options.AdoptRoot && l.adoptRoot(root, res, files) {
		// Built again with the adopted root's spec, as the controller builds it.
		if res, files, appliedBy, err = l.buildRoot(root); err != nil {
			return err
		}
		e.RootResources, e.RootFiles = res, files
	}
	if e.Root == nil && !slices.ContainsFunc(res, l.isRoot) && e.Options.Holes {
		if err := l.rootNamed(root, res); err != nil {
			return err
		}
	}
	l.attribute(files, appliedBy)
	queue, err := l.ingest(res, files, appliedBy)
	if err != nil {
		return err
	}
	onceFixed(queue, nil, OnceFixedFiles(e.RootRepaired))
	o := e.Options // declaredRoot may have named another root
	if e.Root == nil {
		e.Root = e.Kustomization(o.Namespace, o.RootName)
	}
	if e.Root != nil {
		if i := slices.Index(e.Kustomizations, e.Root); i >= 0 {
			e.Kustomizations = slices.Delete(e.Kustomizations, i, i+1)
		}
		e.Kustomizations = slices.Insert(e.Kustomizations, 0, e.Root)
	}
	sourceKey := "GitRepository/" + o.Namespace + "/" + o.RootName
	if e.Root != nil {
		sourceKey = e.Root.SourceKey()
		if appliedBy != "" {
			e.Root.Built, e.Root.Resources, e.Root.Files, e.Root.Path = true, res, files, root
		}
	}
	l.sourceKey = sourceKey
	if err := l.walk(queue, sourceKey); err != nil {
		return err
	}
	l.generatorSources()
	l.clusterMadeSecrets()
	if e.Root != nil {
		for _, g := range e.GitRepositories {
			if "GitRepository/"+g.Namespace+"/"+g.Name == sourceKey {
				e.Source = g
			}
		}
		for _, s := range e.Sources {
			if s.Ref.String() == sourceKey {
				e.RootSource = s
			}
		}
	}
	return nil
}

// rootNamed refuses a root name (Options.Namespace, RootName) that
// nothing renders or declares while the root directory renders the
// Kustomizations applying it (spec.path the root directory): taken as a
// root whose source nothing reads, every Kustomization would be "another
// source", none built. Those are the roots the path renders.
func (l *loader) rootNamed(root string, res []*resource.Resource) error {
	o := l.env.Options
	var roots []string
	for _, r := range res {
		if !isKustomization(r) {
			continue
		}
		m, err := r.Map()
		if err != nil {
			continue
		}
		if p, _, _ := unstructured.NestedString(m, "spec", "path"); strings.Contains(p, "${") || cleanPath(strings.TrimLeft(p, "/")) != root {
			continue
		}
		roots = append(roots, fluxobj.NamespaceOr(r.GetNamespace(), o.Namespace)+"/"+r.GetName())
	}
	if len(roots) == 0 {
		return nil
	}
	var flags []string
	for _, r := range roots {
		ns, name, _ := strings.Cut(r, "/")
		flags = append(flags, fmt.Sprintf("--namespace %s --root %s", ns, name))
	}
	return verify.InputErrorf("the root Kustomization %s/%s: %s renders no such Kustomization, nor does anything declare it; it renders %s, applying %s: pass %s", o.Namespace, o.RootName, root, "Kustomization "+strings.Join(roots, ", "), root, strings.Join(flags, ", or "))
}

// adoptRoot takes as the root the one self-applying root Kustomization
// the root directory renders (res, from files), when no --root named one
// (Options.AdoptRoot): its spec.path is the root directory, and it reads
// a GitRepository or OCIRepository res renders (Discover's
// FormSelfApplying, as the Taskfile layout's flux-system/cluster). None,
// or several, adopt nothing (rootNamed then names them).
func (l *loader) adoptRoot(root string, res []*resource.Resource, files []string) bool {
	e := l.env
	o := e.Options
	sources := map[string]bool{}
	for _, r := range res {
		if k := r.GetKind(); (k == sourcev1.GitRepositoryKind || k == sourcev1.OCIRepositoryKind) && fluxobj.IsSource(r.GetApiVersion(), k) {
			sources[fluxobj.Ref{Kind: k, Namespace: fluxobj.NamespaceOr(r.GetNamespace(), o.Namespace), Name: r.GetName()}.String()] = true
		}
	}
	var found []*kustomizev1.Kustomization
	for _, r := range res {
		k := &kustomizev1.Kustomization{}
		if !isKustomization(r) || fromResource(r, k) != nil || strings.Contains(k.Spec.Path, "${") || cleanPath(strings.TrimLeft(k.Spec.Path, "/")) != root {
			continue
		}
		k.Namespace = fluxobj.NamespaceOr(k.Namespace, o.Namespace)
		if sources[fluxobj.KustomizationSource(k).String()] {
			found = append(found, k)
		}
	}
	if len(found) != 1 {
		return false
	}
	k := found[0]
	loc := e.Locate(files, kustomizev1.KustomizationKind, k.Namespace, k.Name)
	e.Options.Namespace, e.Options.RootName = k.Namespace, k.Name
	e.Origin.Adopted = fmt.Sprintf("no --root given and no %s/%s here: the one self-applying root Kustomization %s renders (%s) is the root", o.Namespace, o.RootName, root, loc)
	e.Notes = append(e.Notes, fmt.Sprintf("the root is Kustomization %s (%s): %s renders no Kustomization %s/%s and nothing declares one, and %s is the one Kustomization it renders that applies %s from a source it renders (a self-applying root); pass --namespace and --root to name another", k.Namespace+"/"+k.Name, loc, root, o.Namespace, o.RootName, k.Namespace+"/"+k.Name, root))
	return true
}

// walk builds the path of every Kustomization in queue not built yet, and
// of those their builds declare, breadth first.
// A Kustomization reading an ExternalArtifact waits until the walk has
// found no more: the ArtifactGenerator making it may be rendered anywhere.
// A Kustomization of another source waits too: a second source of this
// repository (secondSource) may be rendered by a build after it.
func (l *loader) walk(queue []*Kustomization, sourceKey string) error {
	var waiting, others []*Kustomization
	for {
		l.ahead.submit(queue, sourceKey)
		for i := 0; i < len(queue); i++ {
			k := queue[i]
			if k.Built {
				continue
			}
			if k.SourceKey() != sourceKey && fluxobj.KustomizationSource(k.Kustomization).Kind == sourcev1.ExternalArtifactKind {
				waiting = append(waiting, k)
				continue
			}
			if !l.ownSource(k, sourceKey) {
				others = append(others, k)
				continue
			}
			more, err := l.buildChild(k, sourceKey)
			if err != nil {
				return err
			}
			l.ahead.submit(more, sourceKey)
			queue = append(queue, more...)
		}
		if queue, others = l.becameOwn(others, sourceKey); len(queue) > 0 {
			continue
		}
		l.ahead.forget() // the ExternalArtifacts' builds, in turn
		if len(waiting) == 0 {
			l.noteOthers(others, sourceKey)
			return nil
		}
		queue = nil
		for _, k := range waiting {
			more, err := l.buildFromArtifact(k)
			if err != nil {
				return err
			}
			queue = append(queue, more...)
		}
		waiting = nil
		if len(queue) == 0 {
			l.noteOthers(others, sourceKey)
			return nil
		}
	}
}

// buildRoot builds the environment's root directory as the controller
// would: after the root GitRepository's spec.ignore, and with the root
// Kustomization's own spec when it applies this directory (appliedBy is
// then its namespace/name, else "").
func (l *loader) buildRoot(root string) (res []*resource.Resource, files []string, appliedBy string, err error) {
	e, o := l.env, l.env.Options
	res, files, err = l.rootBuild(root, nil, "")
	if err != nil {
		return nil, nil, "", err
	}
	// The root Kustomization, if the root directory renders it, is built
	// again with its own spec (patches, images, targetNamespace …) when it
	// applies this directory, as the controller would.
	var rootObj map[string]any
	for _, r := range res {
		if l.isRoot(r) {
			if rootObj, err = r.Map(); err != nil {
				return nil, nil, "", verify.InputErrorf("%s: Kustomization %s: %w", root, o.RootName, err)
			}
		}
	}
	// The root's GitRepository may exclude files from its artifact.
	if ig := l.specIgnore(res); ig != nil {
		if err := applySpecIgnore(l.tmp, *ig); err != nil {
			return nil, nil, "", fmt.Errorf("spec.ignore: %w", err)
		}
		if l.cache != nil {
			l.cache.reset() // files were removed from the copy
		}
		e.index = &fileIndex{root: l.tmp}
		e.index.load()
		e.Notes = append(e.Notes, "the root's GitRepository spec.ignore was applied to the copy")
		if res, files, err = l.rootBuild(root, nil, " (after the GitRepository's spec.ignore)"); err != nil {
			return nil, nil, "", err
		}
	}
	if rootObj != nil {
		p, _, _ := unstructured.NestedString(rootObj, "spec", "path")
		if cleanPath(p) == root {
			if res, files, err = l.rootBuild(root, rootObj, fmt.Sprintf(" (with the spec of Kustomization %s/%s)", o.Namespace, o.RootName)); err != nil {
				return nil, nil, "", err
			}
			appliedBy = o.Namespace + "/" + o.RootName
		}
	}
	return res, files, appliedBy, nil
}

// rootBuild builds the root directory (with obj, the root Kustomization,
// when it applies it). A build that fails is an input error, but with
// Options.Holes the repository's defect (Env.RootErr, a [build] failure):
// the build without the entries that broke it is returned, or nothing.
func (l *loader) rootBuild(root string, obj map[string]any, how string) ([]*resource.Resource, []string, error) {
	e := l.env
	res, files, repaired, built, err := l.buildRepaired(l.tmp, root, obj)
	if err == nil {
		return res, files, nil
	}
	err = verify.InputErrorf("kustomize build %s%s: %w%s", root, how, l.inRepo(err), leftOut(l.copyNotes))
	if !e.Options.Holes {
		return nil, nil, err
	}
	if e.RootErr != nil {
		// Built again (spec.ignore, the root's spec): noted once.
		if !built {
			return nil, nil, nil
		}
		return res, files, nil
	}
	e.RootErr, e.RootRepaired = err, repaired
	if !built {
		e.Notes = append(e.Notes, fmt.Sprintf("the root directory %s does not build, and no entry left out makes it build: nothing it renders is checked", root))
		return nil, nil, nil
	}
	e.Notes = append(e.Notes, fmt.Sprintf("the root directory %s was built again without %s: what it renders is checked as it would be once %s is fixed", root, holeList(repaired), strings.Join(OnceFixedFiles(repaired), ", ")))
	return res, files, nil
}

// holeList names holes for a note.
func holeList(holes []*Hole) string {
	var s []string
	for _, h := range holes {
		s = append(s, h.String())
	}
	return strings.Join(s, "; ")
}

// buildChild builds the path of Kustomization k, which the walk reached,
// and returns the Kustomizations its build declares; it reads this
// repository (the root's source, or a second source of it: noted when at
// another reference). A path that is not built (a variable, remote
// bases) is noted on k; one that fails to build ends Load unless
// KeepGoing.
func (l *loader) buildChild(k *Kustomization, sourceKey string) ([]*Kustomization, error) {
	k.Path = cleanPath(strings.TrimLeft(k.Spec.Path, "/")) // as specPath; shown for one not built
	if k.SourceKey() != sourceKey {
		l.noteSecondSource(k)
	}
	if ok, err := l.specPath(k, "repository"); !ok {
		return nil, err
	}
	return l.buildPath(k, nil)
}

// specPath sets k.Path from spec.path as the controller joins it to the
// artifact root (securely: a leading "/" is relative to the root) and says
// whether it can be built: a variable in it is noted, not built; a path
// leaving the root (the repository, or the artifact) is always refused,
// also with KeepGoing, as never what the author meant.
func (l *loader) specPath(k *Kustomization, root string) (bool, error) {
	k.Path = cleanPath(strings.TrimLeft(k.Spec.Path, "/"))
	switch {
	case strings.Contains(k.Spec.Path, "${"):
		l.notBuilt(k, fmt.Sprintf("spec.path %q uses a substitution variable: not built", k.Spec.Path))
		return false, nil
	case !isLocal(k.Path) && k.Path != ".":
		return false, verify.InputErrorf("Kustomization %s (%s): spec.path %q leaves the %s (kustomize-controller would clamp it into the %s root): make it relative to the %s root, e.g. ./apps", k.Ref(), k.Location, k.Spec.Path, root, root, root)
	}
	return true, nil
}

// buildPath builds k.Path in this repository's copy, or in the staged
// ExternalArtifact st, as kustomize-controller builds it, and ingests what
// it declares.
func (l *loader) buildPath(k *Kustomization, st *staged) ([]*Kustomization, error) {
	root, in, where := l.tmp, "the repository", ""
	if st != nil {
		root, in = st.Dir, "ExternalArtifact "+fluxobj.KustomizationSource(k.Kustomization).Key().String()+" (made by ArtifactGenerator "+k.Via+")"
		where = " in " + in
	}
	dir := filepath.Join(root, filepath.FromSlash(k.Path))
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, l.childFailed(k, buildError(k, PathNotFound, verify.InputErrorf("spec.path %q is not a directory of %s: kustomize-controller fails it with 'kustomization path not found'", k.Spec.Path, in)))
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(k.Kustomization)
	if err != nil {
		return nil, err
	}
	res, files, repaired, built, err := l.buildRepaired(root, k.Path, obj)
	if err != nil && st != nil {
		err = errors.New(strings.ReplaceAll(err.Error(), st.Dir+string(filepath.Separator), ""))
	}
	if err != nil {
		if remote := remoteRefs(root, dir); len(remote) > 0 && !l.env.Options.Holes {
			l.notBuilt(k, fmt.Sprintf("path %s has remote bases (%s): not built offline", k.Path, strings.Join(remote, ", ")))
			return nil, nil
		}
		ferr := l.childFailed(k, buildError(k, kustomizeReason(err), verify.InputErrorf("kustomize build of spec.path %q%s failed: %w%s", k.Spec.Path, where, l.inRepo(err), leftOut(l.copyNotes))))
		if ferr != nil || !built {
			return nil, ferr
		}
		// Built again without the entries that broke it: checked as it
		// would be once they are fixed.
		k.Repaired = repaired
		k.Note = fmt.Sprintf("%s; built again without %s: what it renders is checked as it would be once %s is fixed", k.Note, holeList(repaired), strings.Join(OnceFixedFiles(repaired), ", "))
		l.env.Notes[len(l.env.Notes)-1] = k.Note
	}
	if st != nil {
		files = l.repoFiles(st, files)
	}
	k.Built, k.Resources, k.Files = true, res, files
	l.attribute(files, k.Ref())
	more, err := l.ingest(res, files, k.Ref())
	onceFixed(more, k.OnceFixed, OnceFixedFiles(k.Repaired))
	return more, err
}

// onceFixed marks the Kustomizations a build rendered as reached through
// a build that left out broken entries (of files), or one above it (up).
func onceFixed(ks []*Kustomization, up, files []string) {
	all := slices.Compact(slices.Sorted(slices.Values(slices.Concat(up, files))))
	if len(all) == 0 {
		return
	}
	for _, k := range ks {
		k.OnceFixed = all
	}
}

// buildFromArtifact builds Kustomization k, which reads an
// ExternalArtifact, from that artifact as the ArtifactGenerator making it
// would stage it from this repository. One this tool cannot make (no
// generator rendered makes it, or it is made from another source) is
// noted, not built; one source-watcher would fail fails k.
func (l *loader) buildFromArtifact(k *Kustomization) ([]*Kustomization, error) {
	src := fluxobj.KustomizationSource(k.Kustomization)
	if ok, err := l.specPath(k, "artifact"); !ok {
		return nil, err
	}
	st, g, err := l.artifact(src.Namespace, src.Name, 0)
	var nm *notMade
	switch {
	case errors.As(err, &nm) && nm.failed:
		return nil, l.childFailed(k, buildError(k, generatorReason(nm), verify.InputErrorf("reads %s, which ArtifactGenerator %s (%s) does not make: %s; fix the generator's spec (kustomize-controller waits for the artifact until then)", src, nm.gen.Ref(), nm.gen.Location, nm.reason)))
	case errors.As(err, &nm):
		l.notBuilt(k, fmt.Sprintf("reads %s, made by ArtifactGenerator %s (%s), but %s: not built, so its objects are not checked", src, nm.gen.Ref(), nm.gen.Location, nm.reason))
		return nil, nil
	case err != nil:
		return nil, err
	case g == nil:
		l.notBuilt(k, fmt.Sprintf("reads %s, an ExternalArtifact no ArtifactGenerator of the environment makes (source-watcher makes one from an ArtifactGenerator's copy rules): not built, so its objects are not checked", src))
		return nil, nil
	}
	k.Via = g.Ref()
	return l.buildPath(k, st)
}

// notBuilt notes on k, and in the env's notes, why its path is not built
// although it is no error.
func (l *loader) notBuilt(k *Kustomization, why string) {
	k.Note = why
	l.env.Notes = append(l.env.Notes, fmt.Sprintf("Kustomization %s (%s): %s", k.Ref(), k.Location, why))
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

// isRoot says whether r is the root Kustomization (Options.Namespace and
// RootName; a rendered object with no namespace is in Options.Namespace).
func (l *loader) isRoot(r *resource.Resource) bool {
	o := l.env.Options
	return isKustomization(r) && r.GetName() == o.RootName && fluxobj.NamespaceOr(r.GetNamespace(), o.Namespace) == o.Namespace
}

// specIgnore is spec.ignore of the root's GitRepository in res, if set.
func (l *loader) specIgnore(res []*resource.Resource) *string {
	o := l.env.Options
	kind, ns, name := sourcev1.GitRepositoryKind, o.Namespace, o.RootName
	for _, r := range res {
		if l.isRoot(r) {
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
	var out []*Kustomization
	for _, r := range res {
		// The name the cluster gets: a namespace written as a variable is
		// the one the applier substitutes (kustomize-controller v1.9.4
		// build: every object, metadata included, before apply).
		nsOf := r
		if strings.Contains(r.GetNamespace(), "${") {
			nsOf = l.substituted(appliedBy, r)
		}
		ns := fluxobj.NamespaceOr(nsOf.GetNamespace(), l.env.Options.Namespace)
		kind := r.GetKind()
		switch {
		case isKustomization(r):
			k, err := l.ingestKustomization(r, ns, files, appliedBy)
			if err != nil {
				return nil, err
			}
			if k != nil {
				out = append(out, k)
			}
		case kind == sourcev1.GitRepositoryKind && fluxobj.IsSource(r.GetApiVersion(), kind):
			raw, r := r.GetName(), l.substituted(appliedBy, r)
			if err := l.ingestGitRepository(r, raw, ns, files, appliedBy); err != nil {
				return nil, err
			}
			l.ingestSource(r, raw, ns, files, appliedBy)
		case fluxobj.IsSource(r.GetApiVersion(), kind):
			// Indexed by the name the cluster gets (a component's
			// ${APP}-chart), as a HelmRelease's chartRef names it; only
			// the name is kept, so only a name with a variable needs it.
			sub := r
			if strings.Contains(r.GetName(), "${") {
				sub = l.substituted(appliedBy, r)
			}
			l.ingestSource(sub, r.GetName(), ns, files, appliedBy)
		case kind == artifactgen.Kind && fluxobj.InGroup(r.GetApiVersion(), artifactgen.Group):
			if err := l.ingestGenerator(r, ns, files, appliedBy); err != nil {
				return nil, err
			}
		case kind == fluxobj.HelmReleaseKind && fluxobj.InGroup(r.GetApiVersion(), fluxobj.HelmGroup):
			if err := l.ingestHelmRelease(r, ns, files, appliedBy); err != nil {
				return nil, err
			}
		case (kind == "ConfigMap" || kind == "Secret") && r.GetApiVersion() == "v1":
			// As applied: a ${APP}-settings copy is the object its readers
			// name in substituteFrom after their own substitution.
			l.ingestData(r.GetName(), ns, files, appliedBy, dataOf(l.substituted(appliedBy, r), ns))
		case madeSecret(r, ns) != nil:
			l.ingestData(r.GetName(), ns, files, appliedBy, madeSecret(l.substituted(appliedBy, r), ns))
		}
	}
	return out, nil
}

// ingestSubstitutes says whether ingest reads r as its Kustomization
// applies it (l.substituted): what the build workers substitute ahead
// (ahead.go). Only a guess ahead of ingest's own dispatch: an object it
// names that ingest does not read costs time, never an answer.
func ingestSubstitutes(r *resource.Resource) bool {
	kind, api := r.GetKind(), r.GetApiVersion()
	switch {
	case isKustomization(r), kind == fluxobj.HelmReleaseKind && fluxobj.InGroup(api, fluxobj.HelmGroup):
		return true
	case (kind == "ConfigMap" || kind == "Secret") && api == "v1":
		return true
	case fluxobj.IsSource(api, kind):
		return kind == sourcev1.GitRepositoryKind || strings.Contains(r.GetName(), "${")
	}
	return strings.Contains(r.GetNamespace(), "${")
}

// ingestKustomization records the Kustomization r (in namespace ns) and
// returns it, or nil when an earlier build rendered it already.
func (l *loader) ingestKustomization(r *resource.Resource, ns string, files []string, appliedBy string) (*Kustomization, error) {
	e := l.env
	k := &kustomizev1.Kustomization{}
	raw := r.GetName()
	r = l.substituted(appliedBy, r)
	if err := substituteValues(r); err != nil {
		err = verify.InputErrorf("Kustomization %s/%s (%s): %w", ns, r.GetName(), e.Locate(files, r.GetKind(), ns, r.GetName()), err)
		if !e.Options.KeepGoing {
			return nil, err
		}
		// The check's [schema] fails its applier (the API server refuses
		// the object); the rest is modelled as it would be once quoted.
		r = quotedSubstitute(r)
		e.Notes = append(e.Notes, fmt.Sprintf("%v (modelled as if quoted)", err))
	}
	loc := e.Locate(files, r.GetKind(), ns, raw)
	if err := l.decode(r, k, "Kustomization "+ns+"/"+r.GetName(), loc); err != nil {
		return nil, verify.InputErrorf("Kustomization %s/%s (%s): %w", ns, r.GetName(), loc, err)
	}
	k.Namespace = ns
	ref := ns + "/" + k.Name
	if l.seen["K/"+ref] {
		// Rendered by the root directory and applied by a Kustomization.
		if !claim(&e.Kustomization(ns, k.Name).AppliedBy, appliedBy) {
			e.Notes = append(e.Notes, fmt.Sprintf("Kustomization %s is rendered again (%s, applied by %s): the first one is kept", ref, loc, orCLI(appliedBy)))
		}
		return nil, nil
	}
	l.seen["K/"+ref] = true
	kk := &Kustomization{Kustomization: k, Location: loc, AppliedBy: appliedBy}
	e.Kustomizations = append(e.Kustomizations, kk)
	return kk, nil
}

// ingestGitRepository records the GitRepository r (in namespace ns) unless
// an earlier build rendered it already.
// r is substituted by its applier; raw is its name as written.
func (l *loader) ingestGitRepository(r *resource.Resource, raw, ns string, files []string, appliedBy string) error {
	e := l.env
	g := &sourcev1.GitRepository{}
	if err := fromResource(r, g); err != nil {
		return verify.InputErrorf("GitRepository %s/%s (%s): %w", ns, r.GetName(), e.Locate(files, r.GetKind(), ns, raw), err)
	}
	g.Namespace = ns
	if l.seen["G/"+ns+"/"+g.Name] {
		return nil
	}
	l.seen["G/"+ns+"/"+g.Name] = true
	e.GitRepositories = append(e.GitRepositories, &GitRepository{GitRepository: g, Location: e.Locate(files, r.GetKind(), ns, raw), AppliedBy: appliedBy})
	return nil
}

// ingestHelmRelease records the HelmRelease r (in namespace ns) unless an
// earlier build rendered it already (then only its applier is claimed).
func (l *loader) ingestHelmRelease(r *resource.Resource, ns string, files []string, appliedBy string) error {
	e := l.env
	hr := &helmv2.HelmRelease{}
	raw := r.GetName()
	// As the cluster gets it: substituted by the Kustomization applying it.
	r = l.substituted(appliedBy, r)
	loc := e.Locate(files, r.GetKind(), ns, raw)
	if err := l.decode(r, hr, "HelmRelease "+ns+"/"+r.GetName(), loc); err != nil {
		return verify.InputErrorf("HelmRelease %s/%s (%s): %w", ns, r.GetName(), loc, err)
	}
	hr.Namespace = ns
	key := "H/" + ns + "/" + hr.Name
	if l.seen[key] {
		for _, old := range e.HelmReleases {
			if old.Namespace == ns && old.Name == hr.Name {
				claim(&old.AppliedBy, appliedBy)
			}
		}
		return nil
	}
	l.seen[key] = true
	e.HelmReleases = append(e.HelmReleases, &HelmRelease{HelmRelease: hr, Location: loc, AppliedBy: appliedBy})
	return nil
}

// ingestSource records the source object r (any kind of the source API,
// substituted by its applier; raw is its name as written), the first
// rendering only.
func (l *loader) ingestSource(r *resource.Resource, raw, ns string, files []string, appliedBy string) {
	e := l.env
	ref := fluxobj.Ref{Kind: r.GetKind(), Namespace: ns, Name: r.GetName()}
	key := "S/" + ref.String()
	if l.seen[key] {
		for _, old := range e.Sources {
			if old.Ref == ref {
				claim(&old.AppliedBy, appliedBy)
			}
		}
		return
	}
	l.seen[key] = true
	src := &Source{Ref: ref, Location: e.Locate(files, r.GetKind(), ns, raw), AppliedBy: appliedBy}
	l.identify(src, r, appliedBy)
	e.Sources = append(e.Sources, src)
}

// ingestData records d, the ConfigMap or Secret r renders (r itself, or
// the Secret r makes at runtime; raw is r's name as written, which locates
// it), in namespace ns; the first rendering is used.
func (l *loader) ingestData(raw, ns string, files []string, appliedBy string, d *Data) {
	e := l.env
	d.AppliedBy = appliedBy
	kind := d.Kind
	if d.MadeBy != "" {
		kind, _, _ = strings.Cut(d.MadeBy, " ")
	}
	d.Location = e.Locate(files, kind, ns, raw)
	old, ok := e.Data[d.Key()]
	if !ok {
		e.Data[d.Key()] = d
		return
	}
	if !claim(&old.AppliedBy, appliedBy) {
		e.Notes = append(e.Notes, fmt.Sprintf("%s is rendered by %s and again by %s: the first is used", d.Key(), orCLI(old.AppliedBy), orCLI(appliedBy)))
	}
}

// claim records that appliedBy applies an object an earlier build rendered:
// true when the root directory rendered it (*first is "") and a
// Kustomization applies it, which is no second rendering.
func claim(first *string, appliedBy string) bool {
	if *first == "" && appliedBy != "" {
		*first = appliedBy
		return true
	}
	return false
}

func orCLI(appliedBy string) string {
	if appliedBy == "" {
		return "the root directory"
	}
	return "Kustomization " + appliedBy
}

func dataOf(r *resource.Resource, ns string) *Data {
	m, _ := r.Map()
	d := &Data{Kind: r.GetKind(), Namespace: ns, Name: r.GetName(), Values: map[string]string{}, Labels: r.GetLabels()}
	_, d.Encrypted = m["sops"]
	for _, field := range []string{"data", "stringData"} {
		// No copy: a substituted value may have become a YAML number,
		// which NestedMap's deep copy refuses (kyaml's int).
		raw, _, _ := unstructured.NestedFieldNoCopy(m, field)
		vals, _ := raw.(map[string]any)
		for k, v := range vals {
			s := fmt.Sprint(v)
			switch {
			case d.Encrypted || strings.HasPrefix(s, "ENC["):
				s = encryptedValue
			case d.Kind == "Secret" && field == "data":
				b, err := base64.StdEncoding.DecodeString(s)
				if err != nil {
					s = undecodableValue
				} else {
					s = string(b)
				}
			}
			d.Values[k] = s
		}
	}
	return d
}

// decode is fromResource for a Flux object the model must keep: a spec
// field whose value does not decode into the API type (a type the CRD
// refuses, which check.substitution reports as the API server would, with
// [schema]) is left out of the model, and noted.
func (l *loader) decode(r *resource.Resource, into any, what string, loc Location) error {
	err := fromResource(r, into)
	if err == nil {
		return nil
	}
	m, merr := r.Map()
	spec, ok := m["spec"].(map[string]any)
	if merr != nil || !ok {
		return err
	}
	kept := maps.Clone(spec)
	var dropped []string
	for _, key := range slices.Sorted(maps.Keys(spec)) {
		probe := reflect.New(reflect.TypeOf(into).Elem()).Interface()
		if runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"spec": map[string]any{key: spec[key]}}, probe) != nil {
			delete(kept, key)
			dropped = append(dropped, "spec."+key)
		}
	}
	m["spec"] = kept
	if len(dropped) == 0 || runtime.DefaultUnstructuredConverter.FromUnstructured(m, into) != nil {
		return err
	}
	l.env.Notes = append(l.env.Notes, fmt.Sprintf("%s (%s): not decodable into the API type, so left out of the model: %s (%v); the check reports what the API server says of it", what, loc, strings.Join(dropped, ", "), err))
	return nil
}

func fromResource(r *resource.Resource, into any) error {
	m, err := r.Map()
	if err != nil {
		return err
	}
	AsApplied(m)
	return runtime.DefaultUnstructuredConverter.FromUnstructured(m, into)
}

// MalformedLabels are the keys of metadata.labels in m whose value is not
// a string (a YAML true, 1), sorted.
func MalformedLabels(m map[string]any) []string {
	labels, _, _ := unstructured.NestedFieldNoCopy(m, "metadata", "labels")
	lm, _ := labels.(map[string]any)
	var out []string
	for k, v := range lm {
		if _, ok := v.(string); !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// AsApplied gives m's metadata as kustomize-controller v1.9.5 applies it
// when a label or annotation value is not a string: fluxcd/pkg/ssa
// v0.76.2 SetOwnerLabels (manager.go) reads the labels with
// unstructured.GetLabels, which returns none when one value is not a
// string, and sets its owner labels alone — every label of the object is
// dropped; an annotation's scalar is stored as its string (both seen on
// the sandbox's kustomize-controller: e2e TestMalformedMetadata). The
// controller's owner labels are not added here.
func AsApplied(m map[string]any) {
	meta, _ := m["metadata"].(map[string]any)
	if meta == nil {
		return
	}
	if len(MalformedLabels(m)) > 0 {
		delete(meta, "labels")
	}
	if an, ok := meta["annotations"].(map[string]any); ok {
		for k, v := range an {
			switch v.(type) {
			case string, map[string]any, []any:
			default:
				if v != nil {
					an[k] = fmt.Sprint(v)
				}
			}
		}
	}
}

func isKustomization(r *resource.Resource) bool {
	return fluxobj.IsKustomization(r.GetApiVersion(), r.GetKind())
}

// substituteValues holds spec.postBuild.substitute to the CRD's schema
// (a map of strings): the API server refuses a YAML number or boolean
// there, so the Kustomization applying it fails its dry run. Named with
// the key and the fix rather than the converter's "cannot convert int to
// string".
func substituteValues(r *resource.Resource) error {
	m, err := r.Map()
	if err != nil {
		return err
	}
	sub, _, _ := unstructured.NestedFieldNoCopy(m, "spec", "postBuild", "substitute")
	vals, ok := sub.(map[string]any)
	if !ok {
		return nil
	}
	for _, key := range slices.Sorted(maps.Keys(vals)) {
		if v := vals[key]; v != nil {
			if _, isString := v.(string); !isString {
				what := "a number"
				if _, isBool := v.(bool); isBool {
					what = "a boolean"
				}
				return fmt.Errorf("spec.postBuild.substitute.%s is %s (%v), not a string: the Kustomization CRD takes strings only and the API server refuses it; quote it: %s: \"%v\"", key, what, v, key, v)
			}
		}
	}
	return nil
}

// quotedSubstitute is a copy of r whose spec.postBuild.substitute values
// are strings (a number or boolean written as its text), as the author
// meant it once quoted.
func quotedSubstitute(r *resource.Resource) *resource.Resource {
	m, err := r.Map()
	if err != nil {
		return r
	}
	vals, _, _ := unstructured.NestedFieldNoCopy(m, "spec", "postBuild", "substitute")
	vm, ok := vals.(map[string]any)
	if !ok {
		return r
	}
	for k, v := range vm {
		if _, isString := v.(string); !isString && v != nil {
			vm[k] = fmt.Sprint(v)
		}
	}
	c, err := resource.NewFactory(nil).FromMap(m)
	if err != nil {
		return r
	}
	return c
}

// substituted is r as the Kustomization appliedBy (namespace/name) will
// apply it (Env.Applied); r itself when no Kustomization applies it.
func (l *loader) substituted(appliedBy string, r *resource.Resource) *resource.Resource {
	ns, name, ok := strings.Cut(appliedBy, "/")
	if !ok {
		return r
	}
	return l.env.Applied(l.env.Kustomization(ns, name), r)
}

// mentionsVar says whether a scalar (key or value) under n holds "${". The
// YAML kustomize writes (Resource.AsYAML: the node as JSON, then YAML) holds
// "${" only where a scalar does: JSON and YAML escape neither $ nor {, and
// break lines only at spaces.
func mentionsVar(n *yaml.Node, seen map[*yaml.Node]bool) bool {
	return mentions(n, "${", seen)
}

// Applied is r as Kustomization k applies it: when k substitutes
// (postBuild) and r holds a ${…}, with the controller's own substitution
// (fluxcd/pkg/kustomize.SubstituteVariables, not strict) over the data the
// environment renders, so a name like ${APP}-db is the name the cluster
// gets (kustomize-controller v1.9.4, kustomization_controller.go build:
// every built object, metadata included, before apply). r itself when k is
// nil, does not substitute, or the substitution fails (the check reports
// that). Treat the result as read-only.
func (e *Env) Applied(k *Kustomization, r *resource.Resource) *resource.Resource {
	if k == nil || !k.Substitutes() {
		return r
	}
	if SubstitutionDisabled(r) {
		// SubstituteVariables returns nil for it (fluxcd/pkg/kustomize
		// v1.35.6 kustomize_varsub.go, after writing it as YAML): r.
		return r
	}
	if !mentionsVar(r.YNode(), map[*yaml.Node]bool{}) {
		return r // no ${ in any key or value, so none in r.AsYAML() (below), without writing it
	}
	out, err := e.Substituted(k, r)
	if err != nil || out == nil {
		return r
	}
	return out
}

// Substituted is kustomize-controller's substitution of r by k as Applied
// runs it — fluxcd/pkg/kustomize.SubstituteVariables, not strict, over the
// data the environment renders (a substituteFrom object it does not render
// is optional) — with the object and the error the call returns, memoized
// with Applied's answers. check's own call is this one where it differs in
// nothing, and takes the answer the load already had. Treat the result as
// read-only.
func (e *Env) Substituted(k *Kustomization, r *resource.Resource) (*resource.Resource, error) {
	a, read, ok := e.appliedMemoized(k, r)
	if ok {
		return a.out, a.err
	}
	out, err := e.substitute(k, r, DataClient{Env: e})
	e.memoizeApplied(k, r, read, appliedAnswer{out: out, err: err})
	return out, err
}

// substitute is Substituted's call, reading substituteFrom with cl.
func (e *Env) substitute(k *Kustomization, r *resource.Resource, cl DataClient) (*resource.Resource, error) {
	pk := k.DeepCopy()
	for i := range pk.Spec.PostBuild.SubstituteFrom {
		pk.Spec.PostBuild.SubstituteFrom[i].Optional = true // a missing one is the check's finding
	}
	uobj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pk)
	if err != nil {
		return nil, err
	}
	return fluxkustomize.SubstituteVariables(context.Background(), cl, unstructured.Unstructured{Object: uobj}, r.DeepCopy(),
		fluxkustomize.SubstituteWithAlways(pk.GetSubstituteStrategy() == kustomizev1.SubstituteStrategyAlways))
}
