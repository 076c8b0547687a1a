package fluxrepo

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"go.yaml.in/yaml/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kustypes "sigs.k8s.io/kustomize/api/types"

	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/pkg/patches"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// The layouts a root can come from (Env.Origin.Layout).
const (
	// LayoutRepository: the root directory renders the root Kustomization
	// (this tool's sync.yaml, or flux bootstrap's flux-system/gotk-sync.yaml).
	LayoutRepository = "repository"
	// LayoutFluxInstance: no root in the repository; a FluxInstance's
	// spec.sync (Flux Operator) declares it, and the operator creates the
	// source and the Kustomization.
	LayoutFluxInstance = "FluxInstance"
	// LayoutCommandLine: the root is given by flags (Options.Sync).
	LayoutCommandLine = "command line"
	// LayoutBootstrap: the root directory holds flux bootstrap's
	// placeholder (flux-system/gotk-sync.yaml with no object): the root is
	// the one flux bootstrap writes there, with the URL of the repository
	// it bootstraps, which the repository does not hold.
	LayoutBootstrap = "flux bootstrap"
)

// SyncFile is the file flux bootstrap writes the root and its
// GitRepository to, under <path>/<namespace>/ (flux2
// pkg/manifestgen/sync.MakeDefaultOptions' ManifestFile).
const SyncFile = "gotk-sync.yaml"

// Sync declares a root that is not in the repository: the source and the
// Kustomization the Flux Operator creates from a FluxInstance's spec.sync,
// or the ones the flags name. Its fields are spec.sync's.
type Sync struct {
	// Kind of the source: GitRepository, OCIRepository or Bucket.
	Kind string `yaml:"kind" json:"kind"`
	URL  string `yaml:"url" json:"url"`
	// Ref is the Git reference (refs/heads/main), the OCI tag or the bucket name.
	Ref  string `yaml:"ref" json:"ref,omitempty"`
	Path string `yaml:"path" json:"path"`
	// Name of the source and Kustomization (default: the namespace).
	Name       string `yaml:"name" json:"name,omitempty"`
	PullSecret string `yaml:"pullSecret" json:"pullSecret,omitempty"`
	// Interval of the source (the operator's default 1m) and its OIDC
	// Provider.
	Interval string `yaml:"interval" json:"interval,omitempty"`
	Provider string `yaml:"provider" json:"provider,omitempty"`
}

// SourceObject is the source the Flux Operator creates from the sync in
// namespace (flux-operator internal/builder/templates.go syncTmpl; the API's
// interval default 1m), named as the root Kustomization.
func (s *Sync) SourceObject(namespace string) *unstructured.Unstructured {
	interval := s.Interval
	if interval == "" {
		interval = "1m0s"
	}
	spec := map[string]any{"interval": interval}
	switch s.Kind {
	case sourcev1.GitRepositoryKind:
		spec["ref"] = map[string]any{"name": s.Ref}
		spec["url"] = s.URL
	case sourcev1.OCIRepositoryKind:
		spec["ref"] = map[string]any{"tag": s.Ref}
		spec["url"] = s.URL
	case sourcev1.BucketKind:
		spec["bucketName"] = s.Ref
		spec["endpoint"] = s.URL
	}
	if s.PullSecret != "" {
		spec["secretRef"] = map[string]any{"name": s.PullSecret}
	}
	if s.Provider != "" {
		spec["provider"] = s.Provider
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(sourcev1.GroupVersion.String())
	u.SetKind(s.Kind)
	u.SetNamespace(namespace)
	u.SetName(s.Name)
	return u
}

// Origin says where the environment's root Kustomization and its source
// come from.
type Origin struct {
	Layout string `json:"layout"`
	// Location is the FluxInstance (or flux-instance chart values) declaring
	// spec.sync; empty for the other layouts.
	Location Location `json:"location,omitempty"`
	// Sync is the declared sync (FluxInstance, command line).
	Sync *Sync `json:"sync,omitempty"`
	// Patches are the FluxInstance's spec.kustomize.patches (the
	// controllers' customization the Flux Operator applies), at
	// PatchesLocation.
	Patches         []kustypes.Patch `json:"patches,omitempty"`
	PatchesLocation Location         `json:"patchesLocation,omitempty"`
	// PatchesField is the field holding them, as the file spells it
	// (spec.kustomize.patches; spec.values.instance.kustomize.patches in
	// a flux-instance HelmRelease).
	PatchesField string `json:"patchesField,omitempty"`
	// Adopted says why the root is a Kustomization no --root named
	// (Options.AdoptRoot): "" when it was named.
	Adopted string `json:"adopted,omitempty"`
	// declared is the root Kustomization as generated from Sync, before
	// the patches (SyncObjects'); Env.Root holds it patched.
	declared *kustomizev1.Kustomization
}

func (o Origin) String() string {
	switch o.Layout {
	case LayoutFluxInstance:
		return fmt.Sprintf("declared by the FluxInstance spec.sync at %s (the Flux Operator creates the source and the Kustomization)", o.Location)
	case LayoutCommandLine:
		return "declared on the command line (--source-url)"
	case LayoutBootstrap:
		return fmt.Sprintf("written by flux bootstrap into %s, a placeholder here: checked as flux bootstrap writes it; declare its real source with --source-url URL, or let bootstrap up/sync --source-kind GitRepository --source-url URL write it", o.Location.File)
	}
	if o.Adopted != "" {
		return "rendered by the root directory; " + o.Adopted
	}
	return "rendered by the root directory"
}

// The source kinds a declared sync may name (the Flux Operator's and
// kustomize-controller's: spec.sourceRef.kind of a Kustomization).
var syncKinds = []string{"GitRepository", "OCIRepository", "Bucket"}

// CheckSync holds a declared sync to the input rules: a known kind (empty:
// any, for a flag read before --source-kind), a URL of that kind's scheme
// without credentials (they belong in the source's secretRef).
func CheckSync(s *Sync, what string) error {
	if err := CheckSyncKind(s.Kind, what); err != nil {
		return err
	}
	if s.URL == "" {
		return verify.InputErrorf("%s: no source URL: set spec.sync.url (or --source-url)", what)
	}
	u, err := url.Parse(s.URL)
	if err != nil {
		return verify.InputErrorf("%s: the source URL does not parse: %v", what, redact(err))
	}
	if _, ok := u.User.Password(); ok {
		return verify.InputErrorf("%s: the source URL carries a password: put the credentials in the source's secretRef (spec.sync.pullSecret), not in the URL", what)
	}
	// The schemes each source accepts (source-controller v1.9.5's CRD
	// validation): GitRepository http, https, ssh; OCIRepository oci; a
	// Bucket's endpoint is a host[:port].
	want := map[string][]string{"GitRepository": {"http", "https", "ssh"}, "OCIRepository": {"oci"}, "Bucket": {""}}[s.Kind]
	scheme := u.Scheme
	if !strings.Contains(s.URL, "://") {
		scheme = ""
	}
	if s.Kind == "" {
		want = []string{"http", "https", "ssh", "oci", ""}
	}
	if !slices.Contains(want, scheme) {
		return verify.InputErrorf("%s: a %s URL must use %s", what, orAny(s.Kind), schemes(want))
	}
	return nil
}

// CheckSyncKind holds a declared sync's source kind to the input rules
// (empty: any).
func CheckSyncKind(kind, what string) error {
	if kind != "" && !slices.Contains(syncKinds, kind) {
		return verify.InputErrorf("%s: source kind %q: must be one of %s", what, kind, strings.Join(syncKinds, ", "))
	}
	return nil
}

// declaredSync is one spec.sync found in a file of the repository.
type declaredSync struct {
	sync      Sync
	namespace string
	loc       Location
	// how: "FluxInstance", "HelmRelease values", "values file".
	how string
	// patches are the sibling kustomize.patches, at patchesLoc.
	patches      []kustypes.Patch
	patchesLoc   Location
	patchesField string
	// patchesErr: kustomize.patches is there but is not a list of patches.
	patchesErr error
}

// syncDeclarations reads every spec.sync of the repository copy: a
// FluxInstance (fluxcd.controlplane.io), a HelmRelease's values.instance.sync
// (the flux-instance chart) and a values file's top-level instance.sync (the
// flux-instance chart's values for helmfile or helm at bootstrap).
func (ix *fileIndex) syncDeclarations() []declaredSync {
	ix.load()
	var out []declaredSync
	for _, rel := range slices.Sorted(maps.Keys(ix.lines)) {
		b := []byte(strings.Join(ix.lines[rel], "\n"))
		if !bytes.Contains(b, []byte("sync")) {
			continue
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var n yaml.Node
			if err := dec.Decode(&n); err != nil {
				break // io.EOF or a document the index skips too
			}
			if n.Kind != yaml.DocumentNode || len(n.Content) == 0 || n.Content[0].Kind != yaml.MappingNode {
				continue
			}
			m := n.Content[0]
			kind, api := scalar(m, "kind"), scalar(m, "apiVersion")
			var parent *yaml.Node // the FluxInstance spec, or the chart's instance value
			ns, how := "", ""
			switch {
			case kind == "FluxInstance" && strings.HasPrefix(api, "fluxcd.controlplane.io/"):
				parent, how = child(m, "spec"), "FluxInstance"
				ns = scalar(child(m, "metadata"), "namespace")
			case kind == fluxobj.HelmReleaseKind && fluxobj.InGroup(api, fluxobj.HelmGroup):
				spec := child(m, "spec")
				parent, how = child(child(spec, "values"), "instance"), "HelmRelease values"
				if ns = scalar(spec, "targetNamespace"); ns == "" {
					ns = scalar(child(m, "metadata"), "namespace")
				}
			case kind == "":
				parent, how = child(m, "instance"), "values file"
			}
			node := child(parent, "sync")
			if node == nil {
				continue
			}
			var s Sync
			if err := node.Decode(&s); err != nil || s.Path == "" {
				continue
			}
			d := declaredSync{sync: s, namespace: ns, loc: Location{File: rel, Line: node.Line}, how: how}
			if pn := value(child(parent, "kustomize"), "patches"); pn != nil {
				d.patchesLoc = Location{File: rel, Line: pn.Line}
				d.patchesField = map[string]string{"FluxInstance": "spec.kustomize.patches", "HelmRelease values": "spec.values.instance.kustomize.patches", "values file": "instance.kustomize.patches"}[how]
				if pn.Kind != yaml.SequenceNode {
					d.patchesErr = errors.New("not a list")
				} else if err := pn.Decode(&d.patches); err != nil {
					d.patchesErr = err
				}
			}
			out = append(out, d)
		}
	}
	return out
}

// checkFluxInstance refuses a --flux-instance file of the repository that
// declares no root: left out of the artifact, or holding no spec.sync
// with a path (another kind of object, a FluxInstance without spec.sync).
// checkInput has already refused a missing file, a directory or a link.
func (l *loader) checkFluxInstance() error {
	f := l.env.Options.FluxInstance
	if f == "" {
		return nil
	}
	rel := cleanPath(f)
	if _, err := os.Stat(filepath.Join(l.tmp, filepath.FromSlash(rel))); err != nil {
		return verify.InputErrorf("--flux-instance %s is left out of the source artifact (by a .sourceignore rule or the default exclusions, or larger than %d bytes), so the Flux Operator would not read it either: %s", f, l.env.Options.MaxFileBytes, fluxInstanceFix)
	}
	for _, d := range l.env.index.syncDeclarations() {
		if d.loc.File == rel {
			return nil
		}
	}
	return verify.InputErrorf("--flux-instance %s: no FluxInstance spec.sync in that file (nor a flux-instance chart HelmRelease's values.instance.sync, nor chart values' instance.sync, with a path): %s", f, fluxInstanceFix)
}

// findSync is the declaration whose spec.sync.path is root, preferring a
// FluxInstance over chart values; ambiguous declarations are noted.
func (l *loader) findSync(root string) (*declaredSync, error) {
	var found []declaredSync
	for _, d := range l.env.index.syncDeclarations() {
		if cleanPath(strings.TrimLeft(d.sync.Path, "/")) == root {
			found = append(found, d)
		}
	}
	if f := l.env.Options.FluxInstance; f != "" {
		found = slices.DeleteFunc(found, func(d declaredSync) bool { return d.loc.File != cleanPath(f) })
		if len(found) == 0 {
			return nil, verify.InputErrorf("--flux-instance %s: no FluxInstance spec.sync (or flux-instance values instance.sync) with path %s there", f, root)
		}
	}
	if len(found) == 0 {
		return nil, nil
	}
	rank := map[string]int{"FluxInstance": 0, "HelmRelease values": 1, "values file": 2}
	slices.SortStableFunc(found, func(a, b declaredSync) int { return rank[a.how] - rank[b.how] })
	for _, d := range found[1:] {
		if d.sync.Kind != found[0].sync.Kind || d.sync.URL != found[0].sync.URL {
			l.env.Notes = append(l.env.Notes, fmt.Sprintf("spec.sync at %s (%s) also names path %s with another source; the one at %s is used (pass --flux-instance FILE to choose)", d.loc, d.how, root, found[0].loc))
		}
	}
	return &found[0], nil
}

// declaredRoot finds the root the repository does not render: Options.Sync
// (the command line) first, then a spec.sync whose path is root. It sets
// Env.Root (a synthesized Kustomization, located at the declaration),
// Env.RootSource, Env.Origin, and names the root in Env.Options. Nothing
// found leaves Env.Root nil (check.graph's no-root).
func (l *loader) declaredRoot(root string) error {
	e := l.env
	o := e.Options
	var s *Sync
	ns, loc := o.Namespace, Location{}
	switch d, err := l.findSync(root); {
	case o.Sync != nil && d != nil:
		return verify.InputErrorf("--source-url declares the root, but the FluxInstance spec.sync at %s already declares it for %s: drop --source-kind, --source-url and --source-ref", d.loc, root)
	case o.Sync != nil:
		cp := *o.Sync
		s = &cp
		if s.Name == "" {
			s.Name = o.RootName
		}
		if err := CheckSync(s, "--source-url"); err != nil {
			return err
		}
		e.Origin = Origin{Layout: LayoutCommandLine, Sync: s}
	case err != nil:
		return err
	case d != nil:
		s = &d.sync
		ns = fluxobj.NamespaceOr(d.namespace, o.Namespace)
		loc = d.loc
		if err := CheckSync(s, fmt.Sprintf("%s: %s spec.sync", d.loc, d.how)); err != nil {
			return err
		}
		if d.patchesErr != nil {
			return verify.InputErrorf("%s: %s: %v; write each patch as {patch: …, target: {kind: …, name: …}}", d.patchesLoc, d.patchesField, d.patchesErr)
		}
		e.Origin = Origin{Layout: LayoutFluxInstance, Location: d.loc, Sync: s, Patches: d.patches, PatchesLocation: d.patchesLoc, PatchesField: d.patchesField}
	default:
		return l.bootstrapRoot(root)
	}
	if s.Path == "" {
		s.Path = "./" + root
	}
	d := synthesize(s, ns)
	e.Origin.declared = d
	// check judges the root the operator creates: patched (a patched
	// spec.wait, timeout or healthChecks is the cluster's).
	k, err := patchedRoot(e.Origin)
	if err != nil {
		return err
	}
	e.Options.Namespace, e.Options.RootName = k.Namespace, k.Name
	e.Root = &Kustomization{Kustomization: k, Location: loc, Path: root}
	l.seen["K/"+e.Root.Ref()] = true
	src := &Source{Ref: fluxobj.Ref{Kind: s.Kind, Namespace: d.Namespace, Name: d.Name}, Location: loc}
	src.URL, src.Reference = sourceIdentity(s.Kind, s.SourceObject(d.Namespace).Object)
	e.Sources = append(e.Sources, src)
	l.seen["S/"+src.Ref.String()] = true
	return nil
}

// bootstrapRoot declares the root flux bootstrap will write when the root
// directory's build read its placeholder: <root>/<namespace>/gotk-sync.yaml
// holding no object (the official examples commit it with a comment that
// flux bootstrap generates it). The root is the one flux2's
// pkg/manifestgen/sync.Generate writes there (flux bootstrap git/github/…,
// cmd/flux/bootstrap_git.go: name and namespace the --namespace, branch
// main, interval 1m): GitRepository <ns>/<ns> (ref.branch main,
// secretRef flux-system) and Kustomization <ns>/<ns> (interval 10m, path
// ./<root>, prune true, sourceRef that GitRepository). Its URL is the
// repository flux bootstrap is given, unknown here. No placeholder leaves
// Env.Root nil.
func (l *loader) bootstrapRoot(root string) error {
	e := l.env
	ns := e.Options.Namespace
	file := path.Join(root, ns, SyncFile)
	if !slices.Contains(e.RootFiles, file) || !holdsNoObject(e.index.lines[file]) {
		return nil
	}
	// The pull secret is flux bootstrap's --secret-name, whose default is
	// the constant default namespace "flux-system", not --namespace (flux2
	// v2.9.x cmd/flux/bootstrap.go:137 rootArgs.defaults.Namespace, used
	// by bootstrap_git.go:311 as the sync Secret).
	s := &Sync{Kind: sourcev1.GitRepositoryKind, Ref: "refs/heads/main", Path: "./" + root, Name: ns, Interval: "1m0s", PullSecret: "flux-system"}
	loc := Location{File: file}
	e.Origin = Origin{Layout: LayoutBootstrap, Location: loc, Sync: s}
	k := synthesize(s, ns)
	e.Options.RootName = k.Name
	e.Root = &Kustomization{Kustomization: k, Location: loc, Path: root}
	l.seen["K/"+e.Root.Ref()] = true
	src := &Source{Ref: fluxobj.Ref{Kind: s.Kind, Namespace: ns, Name: k.Name}, Location: loc}
	e.Sources = append(e.Sources, src)
	l.seen["S/"+src.Ref.String()] = true
	e.Notes = append(e.Notes, fmt.Sprintf("%s is flux bootstrap's placeholder: checked as the root flux bootstrap writes there applies %s (Kustomization %s, path ./%s, prune: true, reading GitRepository %s, branch main); its URL is the repository bootstrapped: declare it with --source-url URL (check), or --source-kind GitRepository --source-url URL on bootstrap up/sync, which create that GitRepository and Kustomization in the cluster",
		file, root, e.Root.Ref(), root, src.Ref.Namespace+"/"+src.Ref.Name))
	return nil
}

// holdsNoObject says a YAML file's documents are all empty (comments only).
func holdsNoObject(lines []string) bool {
	dec := yaml.NewDecoder(strings.NewReader(strings.Join(lines, "\n")))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if err != nil {
			return errors.Is(err, io.EOF)
		}
		if len(n.Content) > 0 && n.Content[0].Tag != "!!null" {
			return false
		}
	}
}

// synthesize builds the root Kustomization of a declared sync.
func synthesize(s *Sync, namespace string) *kustomizev1.Kustomization {
	name := s.Name
	if name == "" {
		name = namespace
	}
	s.Name = name
	return &kustomizev1.Kustomization{
		TypeMeta:   metav1.TypeMeta{APIVersion: kustomizev1.GroupVersion.String(), Kind: kustomizev1.KustomizationKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: kustomizev1.KustomizationSpec{
			Interval:  metav1.Duration{Duration: 10 * time.Minute},
			Path:      s.Path,
			Prune:     true,
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: s.Kind, Name: name},
		},
	}
}

// redact keeps a URL parse error's reason without the URL (which may hold
// a password).
func redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func orAny(kind string) string {
	if kind == "" {
		return "source"
	}
	return kind
}

func schemes(want []string) string {
	var out []string
	for _, w := range want {
		if w == "" {
			out = append(out, "a bare host[:port] (a Bucket endpoint)")
		} else {
			out = append(out, w+"://")
		}
	}
	return strings.Join(out, ", ")
}

// ControllersFile is the file `flux bootstrap` commits the Flux controllers
// in (`flux install --export`), beside gotk-sync.yaml.
const ControllersFile = "gotk-components.yaml"

// ControllersDir is the directory, relative to the repository, where the
// environment keeps the Flux controllers in the `flux bootstrap` layout:
// the one whose gotk-components.yaml the root's build read (flux-system/
// beside the cluster's Kustomizations). The root applies it, with that
// directory's patches, after every sync. "" when the root applies no
// controllers.
func (e *Env) ControllersDir() string {
	for _, f := range e.RootFiles {
		if path.Base(f) == ControllersFile {
			return path.Dir(f)
		}
	}
	return ""
}

// SyncObjects are the source and the root Kustomization of a declared root
// (a FluxInstance's spec.sync, or the command line), as the Flux Operator
// generates them, before the instance's patches (Env.Root holds the root
// patched); nil when the root is not declared.
func (e *Env) SyncObjects() ([]*unstructured.Unstructured, error) {
	if e.Root == nil || e.Origin.Sync == nil || (e.Origin.Layout != LayoutFluxInstance && e.Origin.Layout != LayoutCommandLine) {
		return nil, nil
	}
	k := e.Origin.declared
	if k == nil { // an Env not made by Load
		k = e.Root.Kustomization
	}
	return syncObjects(e.Origin.Sync, k)
}

// syncObjects are the source of s and the root Kustomization k, unstructured.
func syncObjects(s *Sync, k *kustomizev1.Kustomization) ([]*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(k)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return []*unstructured.Unstructured{s.SourceObject(k.Namespace), u}, nil
}

// DeclaredObjects are SyncObjects as the Flux Operator creates them: with
// the FluxInstance's spec.kustomize.patches applied, in the one build that
// patches the controllers too (patches.PatchSync). A root declared on the
// command line has no patches.
func (e *Env) DeclaredObjects() ([]*unstructured.Unstructured, error) {
	objs, err := e.SyncObjects()
	if err != nil || objs == nil || e.Origin.Layout != LayoutFluxInstance || len(e.Origin.Patches) == 0 {
		return objs, err
	}
	return patchSync(e.Origin, objs)
}

func patchSync(o Origin, objs []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	out, err := patches.PatchSync(objs, o.Patches)
	if err != nil {
		return nil, verify.InputErrorf("%s %s: %v; fix the patch", o.PatchesLocation, o.PatchesField, err)
	}
	return out, nil
}

// patchedRoot is the declared root Kustomization (o.declared) as the Flux
// Operator creates it: a FluxInstance's spec.kustomize.patches applied to
// the sync objects in its one build (patches.PatchSync, as
// DeclaredObjects), typed; o.declared itself when nothing patches it.
func patchedRoot(o Origin) (*kustomizev1.Kustomization, error) {
	d := o.declared
	if o.Layout != LayoutFluxInstance || len(o.Patches) == 0 {
		return d, nil
	}
	objs, err := syncObjects(o.Sync, d)
	if err != nil {
		return nil, err
	}
	if objs, err = patchSync(o, objs); err != nil {
		return nil, err
	}
	for _, u := range objs {
		if !fluxobj.IsKustomization(u.GetAPIVersion(), u.GetKind()) {
			continue
		}
		k := &kustomizev1.Kustomization{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, k); err != nil {
			return nil, verify.InputErrorf("%s %s: the patched Kustomization %s/%s: %v; fix the patch", o.PatchesLocation, o.PatchesField, u.GetNamespace(), u.GetName(), err)
		}
		return k, nil
	}
	return d, nil
}
