package fluxrepo

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/internal/safeio"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// The forms a repository declares a cluster root in (Declaration.Form),
// the ones Load understands.
const (
	// FormRootKustomization: the root Kustomization, in a file inside the
	// directory its spec.path names (this tool's sync.yaml): the
	// directory's build renders it.
	FormRootKustomization = "root Kustomization"
	// FormBootstrapSync: flux bootstrap's <dir>/<namespace>/gotk-sync.yaml
	// holding the root Kustomization.
	FormBootstrapSync = "flux bootstrap " + SyncFile
	// FormBootstrapPlaceholder: <dir>/<namespace>/gotk-sync.yaml holding no
	// object, the root flux bootstrap writes there (LayoutBootstrap).
	FormBootstrapPlaceholder = "flux bootstrap placeholder " + SyncFile
	// FormHandApplied: the root Kustomization in a file outside the
	// directory it applies (applied by hand: kubectl apply at bootstrap).
	FormHandApplied = "hand-applied root Kustomization"
	// FormFluxInstance: a FluxInstance's spec.sync.path (or the
	// flux-instance chart's values: a HelmRelease's
	// spec.values.instance.sync.path, a values file's instance.sync.path).
	FormFluxInstance = "FluxInstance spec.sync.path"
	// FormSelfApplying: a root Kustomization of another name than the
	// default (--root), in a file inside the directory its spec.path
	// names, reading a GitRepository or OCIRepository the repository
	// declares: a bootstrap made outside Flux applies it (a Taskfile's
	// kubectl apply of <k8s>/flux/config), and then it applies itself.
	FormSelfApplying = "self-applying root Kustomization"
)

// Discovery bounds: a scan never reads more than this many YAML files,
// nor walks more than this many entries (a vendored tree, a node_modules).
// Variables for the test of the bound.
var (
	maxDiscoverYAML    = 20000
	maxDiscoverEntries = 200000
	maxDiscoverBytes   = int64(256 << 20)
)

// Root is one cluster root the repository declares: the directory a root
// Kustomization applies, and every declaration naming it.
type Root struct {
	// Path is the directory, relative to the repository, slash-separated
	// ("." for the repository's root).
	Path string `json:"path"`
	// Namespace and Name are the root Kustomization's, as the check of
	// Path names it: --namespace and --root (default flux-system) for
	// every form but FormSelfApplying, whose own they are (a FluxInstance's
	// spec.sync may name another, which the load reads there).
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// By are the declarations naming Path, in file order.
	By []Declaration `json:"by"`
}

// Brings says whether root a, brought up, runs b on the same cluster:
// b's directory is a's or inside it (a nested root), or a FluxInstance
// declaring b (or the flux-instance values) is in a file under a's
// directory, so a's tree makes the Flux Operator's sync of b (a migration
// from a Taskfile root to the operator keeps both).
func (a Root) Brings(b Root) bool {
	under := func(p, dir string) bool { return dir == "." || p == dir || strings.HasPrefix(p, dir+"/") }
	return under(b.Path, a.Path) || slices.ContainsFunc(b.By, func(d Declaration) bool {
		return d.Form == FormFluxInstance && under(path.Clean(d.Location.File), a.Path)
	})
}

// Entry is the one root of roots that brings every other up (Brings),
// the root to bring up for all of them on one cluster; false when none
// or several do (roots of several clusters).
func Entry(roots []Root) (Root, bool) {
	var found []Root
	for i, a := range roots {
		if !slices.ContainsFunc(roots, func(b Root) bool { return b.Path != roots[i].Path && !a.Brings(b) }) {
			found = append(found, a)
		}
	}
	if len(found) != 1 {
		return Root{}, false
	}
	return found[0], true
}

// Declaration is where and how a repository declares a root.
type Declaration struct {
	// Form is one of the Form* constants.
	Form string `json:"form"`
	// What says which file of a form holds it, when the form has several
	// (the flux-instance chart's values: a HelmRelease, a values file).
	What     string   `json:"what,omitempty"`
	Location Location `json:"location"`
}

func (d Declaration) String() string {
	if d.What == "" {
		return fmt.Sprintf("%s at %s", d.Form, d.Location)
	}
	return fmt.Sprintf("%s (%s) at %s", d.Form, d.What, d.Location)
}

// DiscoverLooksFor says what Discover looks for, for the message when it
// finds nothing (o's root Kustomization name, default flux-system/flux-system).
func DiscoverLooksFor(o Options) string {
	o = o.withDefaults()
	return fmt.Sprintf("looked for a Kustomization %s/%s whose spec.path is a directory of the repository (this tool's sync.yaml, flux bootstrap's <dir>/%s/%s, or one applied by hand), a Kustomization of any name in a file inside the directory its spec.path names and reading a GitRepository or OCIRepository the repository declares (a self-applying root), flux bootstrap's placeholder <dir>/%s/%s holding no object, and a FluxInstance spec.sync.path (or the flux-instance chart's values instance.sync.path)",
		o.Namespace, o.RootName, o.Namespace, SyncFile, o.Namespace, SyncFile)
}

// Discover finds every cluster root repo declares, in each form Load
// understands (the Form* constants), each root once with every
// declaration naming it, sorted by path. o gives the root
// Kustomization's namespace and name (default flux-system/flux-system)
// and the per-file bound (MaxFileBytes); a self-applying root
// Kustomization of another name is a root too (FormSelfApplying), unless
// a root of o's name already applies its directory or a root's directory
// holds it. The scan reads what
// source-controller would put in the artifact: regular YAML files, no
// symlink followed, the .sourceignore rules applied, each file bounded,
// and at most maxDiscoverYAML of them. notes say what it passed over: a
// declaration whose path is not a directory here or holds a variable, a
// file over the bound, a directory under clusters/ that nothing declares.
// The error is an input error: repo is not a directory.
func Discover(repo string, o Options) (roots []Root, notes []string, err error) {
	o = o.withDefaults()
	abs, err := filepath.Abs(repo)
	if err != nil {
		return nil, nil, verify.InputErrorf("--repo %s: %w", repo, err)
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return nil, nil, verify.InputErrorf("--repo %s: not a directory: pass the GitOps repository's checkout", repo)
	}
	// --repo itself may be a link to the checkout: the walk starts inside it.
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	lines, notes, err := discoverRead(abs, o.MaxFileBytes)
	if err != nil {
		return nil, nil, err
	}
	// The index's readers over the files read (load is done: no walk).
	ix := &fileIndex{root: abs, lines: lines}
	ix.once.Do(func() {})

	d := &discovery{abs: abs, o: o, byPath: map[string]*Root{}, notes: notes}
	var selfApplying []fluxDoc
	sources := map[string]bool{}
	for _, rel := range slices.Sorted(maps.Keys(lines)) {
		for _, k := range fluxDocs(lines[rel], o) {
			k.file = rel
			switch {
			case k.kind != fluxobj.KustomizationKind:
				sources[fluxobj.Ref{Kind: k.kind, Namespace: k.namespace, Name: k.name}.String()] = true
			case k.name == o.RootName && k.namespace == o.Namespace:
				root := cleanPath(strings.TrimLeft(k.path, "/"))
				decl := Declaration{Form: FormHandApplied, Location: Location{File: rel, Line: k.line}}
				switch {
				case rel == path.Join(root, o.Namespace, SyncFile):
					decl.Form = FormBootstrapSync
				case inDir(rel, root):
					decl.Form = FormRootKustomization
				}
				d.add(k.path, decl, "spec.path")
			case inDir(rel, cleanPath(strings.TrimLeft(k.path, "/"))):
				selfApplying = append(selfApplying, k)
			}
		}
		// flux bootstrap's placeholder: <dir>/<namespace>/gotk-sync.yaml
		// with no object (bootstrapRoot's rule).
		if path.Base(rel) == SyncFile && path.Base(path.Dir(rel)) == o.Namespace && holdsNoObject(lines[rel]) {
			d.add(path.Dir(path.Dir(rel)), Declaration{Form: FormBootstrapPlaceholder, Location: Location{File: rel}}, "its directory")
		}
	}
	for _, s := range ix.syncDeclarations() {
		what := map[string]string{"HelmRelease values": "flux-instance HelmRelease values", "values file": "flux-instance chart values"}[s.how]
		d.add(s.sync.Path, Declaration{Form: FormFluxInstance, What: what, Location: s.loc}, "spec.sync.path")
	}
	d.selfApplying(selfApplying, sources)
	for _, p := range slices.Sorted(maps.Keys(d.byPath)) {
		r := d.byPath[p]
		slices.SortStableFunc(r.By, func(a, b Declaration) int { return strings.Compare(a.Location.File, b.Location.File) })
		roots = append(roots, *r)
	}
	// A directory under clusters/ that nothing declares is named: the
	// user may expect it checked.
	if entries, err := os.ReadDir(filepath.Join(abs, "clusters")); err == nil {
		for _, e := range entries {
			p := "clusters/" + e.Name()
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && d.byPath[p] == nil {
				d.notes = append(d.notes, fmt.Sprintf("%s: no root declares it (no Kustomization %s/%s with spec.path ./%s, no self-applying Kustomization in it, no %s/%s, no FluxInstance spec.sync.path): not checked; bootstrap check --path %s checks it as a path whose root is made elsewhere", p, o.Namespace, o.RootName, p, o.Namespace, SyncFile, p))
			}
		}
	}
	return roots, d.notes, nil
}

// discovery is Discover's state: the roots found by path, and its notes.
type discovery struct {
	abs    string
	o      Options
	byPath map[string]*Root
	notes  []string
}

// localDir is p (a spec.path) cleaned, when it names a directory of the
// repository; why says why not.
func (d *discovery) localDir(p string) (root, why string) {
	if strings.Contains(p, "${") {
		return "", "is written with a variable: not checked (pass --path)"
	}
	root = cleanPath(strings.TrimLeft(p, "/"))
	if !isLocal(root) {
		return "", "is not inside the repository: not checked"
	}
	if fi, err := os.Lstat(filepath.Join(d.abs, filepath.FromSlash(root))); err != nil || !fi.IsDir() {
		return "", "is not a directory of this repository (another repository's path?): not checked"
	}
	return root, ""
}

// add records declaration decl of the root at p (field names p's field
// for a note), the root Kustomization o's.
func (d *discovery) add(p string, decl Declaration, field string) {
	root, why := d.localDir(p)
	if why != "" {
		d.notes = append(d.notes, fmt.Sprintf("%s: %s %s %s", decl.Location, field, p, why))
		return
	}
	r := d.byPath[root]
	if r == nil {
		r = &Root{Path: root, Namespace: d.o.Namespace, Name: d.o.RootName}
		d.byPath[root] = r
	}
	if !slices.Contains(r.By, decl) {
		r.By = append(r.By, decl)
	}
}

// selfApplying adds the self-applying root Kustomizations of another
// name than o's (ks: the Kustomizations of any name declared inside their
// own spec.path, in file order) whose spec.sourceRef is a GitRepository or
// OCIRepository the repository declares (sources, by Ref): the root of a
// bootstrap made outside Flux (a Taskfile applying <k8s>/flux/config,
// whose root Kustomization applies <k8s>/flux and so itself). One a
// root already applies (a root of o's name at the same directory wins),
// or inside another root's directory (that root's child), is noted, not
// a root. The shallowest directories come first.
func (d *discovery) selfApplying(ks []fluxDoc, sources map[string]bool) {
	depth := func(p string) int { return strings.Count(p, "/") }
	slices.SortStableFunc(ks, func(a, b fluxDoc) int {
		pa, pb := cleanPath(strings.TrimLeft(a.path, "/")), cleanPath(strings.TrimLeft(b.path, "/"))
		return depth(pa) - depth(pb)
	})
	for _, k := range ks {
		src := fluxobj.Ref{Kind: k.srcKind, Namespace: fluxobj.NamespaceOr(k.srcNamespace, k.namespace), Name: k.srcName}
		if (src.Kind != fluxobj.GitRepositoryKind && src.Kind != fluxobj.OCIRepositoryKind) || !sources[src.String()] {
			continue // not reading a source of this repository: no root here
		}
		root, why := d.localDir(k.path)
		if why != "" {
			continue
		}
		loc := Location{File: k.file, Line: k.line}
		ref := k.namespace + "/" + k.name
		if r := d.byPath[root]; r != nil {
			if r.Namespace+"/"+r.Name != ref {
				d.notes = append(d.notes, fmt.Sprintf("%s: Kustomization %s applies its own directory %s, whose root is %s/%s: not a root of its own (pass --path %s --namespace %s --root %s to check it as one)", loc, ref, root, r.Namespace, r.Name, root, k.namespace, k.name))
				continue
			}
			r.By = append(r.By, Declaration{Form: FormSelfApplying, Location: loc})
			continue
		}
		if outer := d.holding(root); outer != "" {
			d.notes = append(d.notes, fmt.Sprintf("%s: Kustomization %s applies its own directory %s, inside the cluster root %s: not a root of its own (pass --path %s --namespace %s --root %s to check it as one)", loc, ref, root, outer, root, k.namespace, k.name))
			continue
		}
		d.byPath[root] = &Root{Path: root, Namespace: k.namespace, Name: k.name, By: []Declaration{{Form: FormSelfApplying, Location: loc}}}
	}
}

// holding is the root whose directory holds p (a subdirectory), "" when none.
func (d *discovery) holding(p string) string {
	for _, r := range slices.Sorted(maps.Keys(d.byPath)) {
		if r != p && inDir(p, r) {
			return r
		}
	}
	return ""
}

// inDir says whether the slash path rel is inside the directory dir ("."
// holds everything).
func inDir(rel, dir string) bool {
	return dir == "." || strings.HasPrefix(rel, dir+"/")
}

// discoverRead reads the YAML files of the repository at abs as
// source-controller archives them (copyRepo's rules: regular files, no
// symlink, the ignore rules, at most max bytes each; an alias bomb is not
// read), bounded in count, by slash path relative to abs.
func discoverRead(abs string, max int64) (map[string][]string, []string, error) {
	ignored, err := ignoreFilter(abs, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("source ignore patterns: %w", err)
	}
	lines := map[string][]string{}
	var notes []string
	entries, total := 0, int64(0)
	errStop := fmt.Errorf("stop")
	err = filepath.WalkDir(abs, func(p string, d fs.DirEntry, werr error) error {
		if werr != nil {
			return nil // an unreadable directory: what it holds is not read
		}
		if entries++; entries > maxDiscoverEntries || len(lines) >= maxDiscoverYAML || total > maxDiscoverBytes {
			notes = append(notes, fmt.Sprintf("the search for cluster roots stopped after %d entries, %d YAML files, %d bytes (its bounds: %d, %d, %d): pass --path for a root it did not reach", entries-1, len(lines), total, maxDiscoverEntries, maxDiscoverYAML, maxDiscoverBytes))
			return errStop
		}
		rel, _ := filepath.Rel(abs, p)
		switch {
		case rel == ".":
			return nil
		case d.IsDir() && d.Name() == ".git":
			return filepath.SkipDir
		case d.IsDir(), !d.Type().IsRegular(): // a symlink is never followed
			return nil
		}
		if ext := filepath.Ext(p); ext != ".yaml" && ext != ".yml" || ignored(p, false) {
			return nil
		}
		slash := filepath.ToSlash(rel)
		b, big, err := readBounded(p, d, max)
		switch {
		case err != nil:
			return nil
		case big:
			notes = append(notes, fmt.Sprintf("%s: larger than %d bytes, not read (as source-controller's artifact leaves it out here)", slash, max))
			return nil
		}
		if _, why := safeio.AliasBomb(b); why != "" {
			notes = append(notes, fmt.Sprintf("%s: %s; not read", slash, why))
			return nil
		}
		lines[slash] = strings.Split(string(b), "\n")
		total += int64(len(b))
		return nil
	})
	if err != nil && err != errStop {
		return nil, nil, err
	}
	return lines, notes, nil
}

// readBounded reads the regular file p the walk found as d (the file
// opened is that one, not a symlink put in its place) when it has at most
// max bytes; big says it has more.
func readBounded(p string, d fs.DirEntry, max int64) (b []byte, big bool, err error) {
	walked, err := d.Info()
	if err != nil {
		return nil, false, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || !os.SameFile(st, walked) {
		return nil, false, fmt.Errorf("%s: not the regular file walked", p)
	}
	if st.Size() > max {
		return nil, true, nil
	}
	b, err = io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, false, err
	}
	return b, int64(len(b)) > max, nil
}

// fluxDoc is a Flux Kustomization document of a file (kind
// Kustomization: its spec.path, the line of that field, its sourceRef) or
// a GitRepository or OCIRepository document (kind and name only).
type fluxDoc struct {
	kind, namespace, name string
	path                  string
	line                  int
	file                  string
	// srcKind, srcNamespace and srcName are the Kustomization's
	// spec.sourceRef as written.
	srcKind, srcNamespace, srcName string
}

// fluxDocs reads the documents of a YAML file that are Flux
// Kustomizations with a spec.path (a namespace the document does not set
// is the one kustomize-controller's root has: o.Namespace), and the
// GitRepositories and OCIRepositories (namespace defaulted alike).
func fluxDocs(lines []string, o Options) []fluxDoc {
	b := []byte(strings.Join(lines, "\n"))
	if !bytes.Contains(b, []byte(fluxobj.KustomizeGroup)) && !bytes.Contains(b, []byte(fluxobj.SourceGroup)) {
		return nil
	}
	var out []fluxDoc
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			return out // io.EOF, or a document the index skips too
		}
		if n.Kind != yaml.DocumentNode || len(n.Content) == 0 || n.Content[0].Kind != yaml.MappingNode {
			continue
		}
		m := n.Content[0]
		md := child(m, "metadata")
		api, kind := scalar(m, "apiVersion"), scalar(m, "kind")
		doc := fluxDoc{kind: kind, namespace: fluxobj.NamespaceOr(scalar(md, "namespace"), o.Namespace), name: scalar(md, "name")}
		switch {
		case (kind == fluxobj.GitRepositoryKind || kind == fluxobj.OCIRepositoryKind) && fluxobj.IsSource(api, kind):
			out = append(out, doc)
		case fluxobj.IsKustomization(api, kind):
			spec := child(m, "spec")
			pn := value(spec, "path")
			if pn == nil || pn.Kind != yaml.ScalarNode || pn.Value == "" {
				continue
			}
			doc.path, doc.line = pn.Value, pn.Line
			sr := child(spec, "sourceRef")
			doc.srcKind, doc.srcNamespace, doc.srcName = scalar(sr, "kind"), scalar(sr, "namespace"), scalar(sr, "name")
			out = append(out, doc)
		}
	}
}
