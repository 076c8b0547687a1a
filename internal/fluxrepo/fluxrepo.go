// Package fluxrepo is the one model of a Flux GitOps repository: an
// environment's root directory (clusters/<env>) built exactly as
// kustomize-controller builds it, and every Flux Kustomization it declares,
// followed transitively through spec.path, each path built on a private copy
// of the repository the same way (the kustomization.yaml generator for
// directories without one, then SecureBuild: confined to the repository, no
// plugins, no remote bases).
//
// Load returns typed Flux objects, each with the file and line it came from,
// the built (unsubstituted) objects of each Kustomization's path, the
// ConfigMaps and Secrets the environment renders, and notes for what could
// not be built. Nothing here talks to a cluster; objects are kept
// unsubstituted, except that a Kustomization rendered by one that
// substitutes is modelled under its substituted name and spec (a
// component's ${APP}-db), as the controller applies it.
//
// The repository is first copied as source-controller archives it (ignore
// rules, no symlinks, a size cap per file), so builds never read outside it
// and the generator never writes into it.
//
// It is the one model every phase reads: check runs on it, rootsync's
// Render is its root directory (RootObjects, Root, Source, Locate), agekey's
// Scope takes the Kustomizations and the files their builds read, and the
// dependsOn graph (internal/fluxgraph) is built from its Kustomizations.
package fluxrepo

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/resource"

	"github.com/homelab-ops/bootstrap/internal/fluxobj"
)

// DefaultMaxFileBytes caps the size of one file of the repository copy.
const DefaultMaxFileBytes = 4 << 20

// Options select the environment to load.
type Options struct {
	// Repo is the repository's root directory.
	Repo string
	// Path is the environment's root directory inside Repo, e.g. clusters/dev.
	Path string
	// Namespace and RootName name the root Kustomization (default
	// flux-system/flux-system). Namespace is also the namespace of rendered
	// objects that set none.
	Namespace, RootName string
	// AdoptRoot: Namespace and RootName are the defaults, not chosen (no
	// --namespace, --root). Where the root directory renders no such root
	// and nothing declares one, the one self-applying root Kustomization
	// it renders (spec.path the root directory, reading a GitRepository or
	// OCIRepository it renders) is taken as the root, and Origin.Adopted
	// says so.
	AdoptRoot bool
	// MaxFileBytes caps each file read (default DefaultMaxFileBytes).
	MaxFileBytes int64
	// Sync declares the root when the repository renders none (the
	// command line's --source-kind/--source-url/--source-ref): the source
	// and the Kustomization named RootName in Namespace, at Path.
	Sync *Sync
	// FluxInstance is the file (relative to Repo) holding the FluxInstance
	// (or flux-instance chart values) whose spec.sync declares the root;
	// empty: any file of the repository whose spec.sync.path is Path.
	FluxInstance string
	// UpstreamBuild builds every path with fluxkustomize.Build, exactly the
	// controller's call, instead of the loader's fork that skips the
	// per-build OpenAPI reset (docs/benchmarks.md compares the two).
	UpstreamBuild bool
	// KeepGoing records a Kustomization whose path does not build (a build
	// error, a path that is not a directory) in its Err and
	// Note and goes on, instead of failing Load: for the phases that only
	// need the root to build (sync applies the root; the controller fails
	// that Kustomization later). The root directory must build regardless.
	// The offline check keeps going too: each Kustomization.Err is its
	// [build] finding, as kustomize-controller fails only that one.
	KeepGoing bool
	// Holes (the offline check) makes what cannot be read offline a hole,
	// not a wall: an entry of a kustomization file naming a remote
	// resource, base or generator file, or a file over MaxFileBytes, is
	// left out of every build (in the copy) and recorded in Env.Holes; a
	// path that does not build, the root directory included, is built
	// again without the entry that broke it (Kustomization.Repaired,
	// Env.RootErr), at most MaxRepairs entries per build, so what it
	// renders is still checked. A root name (Namespace, RootName) nothing
	// renders or declares, while the root directory renders the
	// Kustomization applying it, is then an input error naming that one
	// (else every Kustomization would be "another source", none built).
	Holes bool
	// FetchRemote (with Holes) fetches what a kustomization lists
	// remotely into the copy, as kustomize's loader does when
	// kustomize-controller builds: a resource URL or generator file
	// name=URL over HTTP(S) (bounded by MaxFileBytes and FetchTimeout), a
	// remote base cloned by kustomize's own remote loader. What cannot be
	// fetched stays a hole. Off: nothing is ever fetched.
	FetchRemote bool
	// RecordBuilds, when set, records this load's kustomize builds of the
	// repository's own directories there, and ReuseBuilds takes a build
	// recorded there (by the load of another revision) instead of building
	// again when its inputs answer the same (reuse.go: `bootstrap diff`).
	RecordBuilds, ReuseBuilds *Builds
	// Copies, when set, keeps the private copy of the repository for the
	// next load sharing it, restored (copies.go), instead of copying the
	// repository again for each load.
	Copies *Copies
}

// FetchTimeout bounds one fetch of a remote file (Options.FetchRemote).
const FetchTimeout = 30 * time.Second

// MaxRepairs bounds the entries left out of one build that does not build
// as committed (Options.Holes).
const MaxRepairs = 8

// Hole is one entry of a kustomization file left out of a build: one the
// tool cannot read offline (Offline: kustomize-controller may read it),
// or one that broke the build (left out so the rest is still checked).
type Hole struct {
	// Location is the kustomization file and the entry's line; for a file
	// a generated kustomization.yaml would list, the file itself.
	Location Location
	// Field is the kustomization field holding the entry (resources,
	// components, configMapGenerator[dashboards].files …); "" for a file
	// of a generated kustomization.yaml.
	Field string
	// Entry is the entry as written.
	Entry string
	// Offline: a remote resource, base or generator file, or a file over
	// the read bound (Why says which).
	Offline bool
	// Why says what the entry is, or what is wrong with it.
	Why string
	// Absent: the entry names a file the artifact does not hold (not in
	// the repository, or ignored): left out, the build is what the commit
	// renders, nothing unknown.
	Absent bool
	// By are the builds that left it out: Kustomizations (namespace/name),
	// "" for the root directory when no Kustomization applies it.
	By []string
}

func (h *Hole) String() string {
	if h.Field == "" {
		return fmt.Sprintf("%s (%s)", h.Location, h.Why)
	}
	return fmt.Sprintf("%s: %s entry %q (%s)", h.Location, h.Field, h.Entry, h.Why)
}

// Location is where an object or a line comes from: a file relative to the
// repository (slash-separated) and a 1-based line, 0 when unknown.
type Location struct {
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
}

func (l Location) String() string {
	switch {
	case l.File == "":
		return "(file unknown)"
	case l.Line == 0:
		return l.File
	}
	return fmt.Sprintf("%s:%d", l.File, l.Line)
}

// Kustomization is one Flux Kustomization of the environment.
type Kustomization struct {
	*kustomizev1.Kustomization
	// Location is the file (and line) declaring it.
	Location Location
	// AppliedBy is the namespace/name of the Kustomization whose path renders
	// it; empty when only the environment's root directory renders it and no
	// root Kustomization applies that directory.
	AppliedBy string
	// Path is spec.path cleaned, relative to the repository ("." for the
	// root), or to the ExternalArtifact it reads (Via).
	Path string
	// Via is the ArtifactGenerator (namespace/name) that makes the
	// ExternalArtifact this Kustomization reads, when built from it; Files
	// are then the repository files the artifact's were copied from.
	Via string
	// Built says Resources hold the build of Path. When false, Note says why.
	Built bool
	Note  string
	// Err is why the path did not build, when Options.KeepGoing let Load
	// go on (an input error naming the Kustomization and the fix).
	Err error
	// Repaired are the entries left out so the path builds (Options.Holes):
	// Err is then its build as committed, Built says the build without
	// them succeeded and Resources hold it.
	Repaired []*Hole
	// OnceFixed are the kustomization files whose broken entries were left
	// out of a build above this Kustomization (its applier's, or further
	// up): it is checked as it would be once they are fixed.
	OnceFixed []string
	// OtherSource: it reads a source that is not the root's nor a second
	// source of this repository: another repository (not built, a note
	// rather than a check that could not run), or a source nothing
	// renders (Env.SourceOf is nil: it never applies).
	OtherSource bool
	// Resources are the objects built from Path, unsubstituted, as
	// kustomize-controller holds them before post-build substitution. Treat
	// them as read-only (DeepCopy before substituting).
	Resources []*resource.Resource
	// Files are the files (relative, slash-separated) the build read.
	Files []string
}

// Ref is namespace/name.
func (k *Kustomization) Ref() string { return k.Namespace + "/" + k.Name }

// Substitutes says whether the controller runs post-build substitution on
// this Kustomization's objects.
func (k *Kustomization) Substitutes() bool { return k.Spec.PostBuild != nil }

// Objects converts Resources to unstructured objects.
func (k *Kustomization) Objects() ([]*unstructured.Unstructured, error) {
	return objectsOf(k.Resources)
}

// RootObjects converts RootResources to unstructured objects (what a sync
// applies).
func (e *Env) RootObjects() ([]*unstructured.Unstructured, error) { return objectsOf(e.RootResources) }

func objectsOf(res []*resource.Resource) ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, 0, len(res))
	for _, r := range res {
		// Through JSON, as the API machinery reads objects: kyaml's map holds
		// int, which unstructured cannot deep-copy (int64 and float64 only).
		data, err := r.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.CurId(), err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			return nil, fmt.Errorf("%s: %w", r.CurId(), err)
		}
		out = append(out, u)
	}
	return out, nil
}

// SourceKey is the source the Kustomization reads, kind/namespace/name.
func (k *Kustomization) SourceKey() string {
	return fluxobj.KustomizationSource(k.Kustomization).String()
}

// GitRepository is one GitRepository the environment renders.
type GitRepository struct {
	*sourcev1.GitRepository
	Location  Location
	AppliedBy string
}

// Ref is namespace/name.
func (g *GitRepository) Ref() string { return g.Namespace + "/" + g.Name }

// HelmRelease is one HelmRelease the environment renders.
type HelmRelease struct {
	*helmv2.HelmRelease
	Location Location
	// AppliedBy is the Kustomization whose path renders it ("" as for
	// Kustomization.AppliedBy).
	AppliedBy string
}

// Ref is namespace/name.
func (h *HelmRelease) Ref() string { return h.Namespace + "/" + h.Name }

// Source is one Flux source object the environment renders (any kind of
// the source API: GitRepository, OCIRepository, HelmRepository, Bucket,
// HelmChart, ExternalArtifact).
type Source struct {
	Ref       fluxobj.Ref
	Location  Location
	AppliedBy string
	// URL is a GitRepository's or OCIRepository's spec.url (a declared
	// sync's URL), Reference its spec.ref as JSON: which repository it
	// reads (fluxobj.SameSourceURL), at which reference.
	URL, Reference string
}

// Data is a ConfigMap or Secret the environment renders: its keys (the
// variables it defines when a Kustomization substitutes from it).
type Data struct {
	Kind, Namespace, Name string
	// Values by key. A SOPS-encrypted Secret's keys are there with the value
	// "<encrypted>": defined, unreadable.
	Values map[string]string
	// Encrypted is a SOPS-encrypted Secret.
	Encrypted bool
	// AppliedBy is the Kustomization whose path renders it ("" as above).
	AppliedBy string
	Location  Location
	// MadeBy names the object that makes this Secret at runtime (an
	// ExternalSecret, a SealedSecret: "Kind namespace/name"); Location is
	// then that object's. Its keys are the ones it declares.
	MadeBy string
	// FromManager: its values come from a secret manager (an
	// ExternalSecret's or ClusterExternalSecret's store), which
	// external-secrets syncs on its own refresh, not when Flux applies.
	FromManager bool
	// Labels are the object's labels (for a made Secret, those its maker
	// puts on it): kustomize-controller reconciles the Kustomizations
	// reading it when it changes if they match its
	// --watch-configs-label-selector, which check reads from the
	// controller's flags.
	Labels map[string]string
	// Open: the maker may add keys the repository does not show
	// (ExternalSecret dataFrom, templateFrom), so any key may be defined.
	Open bool
}

// Defines says whether the object defines key (an open one may).
func (d *Data) Defines(key string) bool {
	_, ok := d.Values[key]
	return ok || d.Open
}

// Key is kind/namespace/name.
func (d *Data) Key() string { return DataKey(d.Kind, d.Namespace, d.Name) }

// DataKey is the key of Env.Data: kind/namespace/name.
func DataKey(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

// Env is one environment of the repository.
type Env struct {
	Options Options
	// Repo is the absolute repository directory.
	Repo string
	// RootResources are the objects built from the environment's root directory.
	RootResources []*resource.Resource
	// RootFiles are the files that build read.
	RootFiles []string
	// Root is the root Kustomization (nil when the root directory lacks it
	// and nothing declares it); Source the GitRepository it reads (nil when
	// not rendered or of another kind).
	Root   *Kustomization
	Source *GitRepository
	// RootSource is the root's source, any kind (nil when not rendered nor
	// declared); Origin says where the root came from.
	RootSource *Source
	Origin     Origin
	// Kustomizations are all Flux Kustomizations found, root first, then in
	// the order they were reached.
	Kustomizations  []*Kustomization
	GitRepositories []*GitRepository
	// HelmReleases are every HelmRelease rendered, in the order reached;
	// Sources every source object rendered, any kind (GitRepositories
	// holds the GitRepositories typed).
	HelmReleases []*HelmRelease
	Sources      []*Source
	// Generators are every ArtifactGenerator rendered; the
	// ExternalArtifacts they make from this repository are in Sources.
	Generators []*Generator
	// Data are the ConfigMaps and Secrets rendered, by DataKey. When several
	// paths render the same object, the first one reached wins (noted).
	Data map[string]*Data
	// Notes are what a person should know: paths not built and why, files
	// left out of the copy, objects rendered twice.
	Notes []string
	// Holes are the entries left out of the builds because the tool cannot
	// read them offline (Options.Holes), each once, with the builds that
	// read the file declaring it.
	Holes []*Hole
	// RootErr is the root directory's build as committed when it failed
	// (Options.Holes: the repository's defect, not an input error);
	// RootRepaired are the entries left out so it builds (RootResources
	// are that build; none if it did not).
	RootErr      error
	RootRepaired []*Hole

	index *fileIndex
	// applied memoizes Applied (applied.go).
	appliedMu sync.Mutex
	applied   *appliedMemo
}

// Err is the first Kustomization whose path did not build (nil when all
// did): what Load without KeepGoing would have returned.
func (e *Env) Err() error {
	for _, k := range e.Kustomizations {
		if k.Err != nil {
			return k.Err
		}
	}
	return nil
}

// Kustomization finds a Kustomization by namespace and name.
func (e *Env) Kustomization(namespace, name string) *Kustomization {
	for _, k := range e.Kustomizations {
		if k.Namespace == namespace && k.Name == name {
			return k
		}
	}
	return nil
}

// HelmRelease finds a HelmRelease by namespace and name.
func (e *Env) HelmRelease(namespace, name string) *HelmRelease {
	for _, h := range e.HelmReleases {
		if h.Namespace == namespace && h.Name == name {
			return h
		}
	}
	return nil
}

// Locate is where an object of kind namespace/name is declared, looking
// first in files (the files a build read; nil means all files).
func (e *Env) Locate(files []string, kind, namespace, name string) Location {
	return e.index.locate(files, kind, namespace, name)
}

// FindLine is the first line of one of files (nil: all) that contains text,
// preferring prefer (a file) when it has it. For text starting with "${",
// occurrences escaped as "$${" do not count.
func (e *Env) FindLine(files []string, prefer, text string) Location {
	return e.index.findLine(files, prefer, text)
}

func cleanPath(p string) string {
	p = path.Clean(strings.TrimPrefix(filepath.ToSlash(p), "./"))
	if p == "" {
		return "."
	}
	return p
}
