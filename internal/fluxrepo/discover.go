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
	// By are the declarations naming Path, in file order.
	By []Declaration `json:"by"`
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
	return fmt.Sprintf("looked for a Kustomization %s/%s whose spec.path is a directory of the repository (this tool's sync.yaml, flux bootstrap's <dir>/%s/%s, or one applied by hand), flux bootstrap's placeholder <dir>/%s/%s holding no object, and a FluxInstance spec.sync.path (or the flux-instance chart's values instance.sync.path)",
		o.Namespace, o.RootName, o.Namespace, SyncFile, o.Namespace, SyncFile)
}

// Discover finds every cluster root repo declares, in each form Load
// understands (the Form* constants), each root once with every
// declaration naming it, sorted by path. o gives the root
// Kustomization's namespace and name (default flux-system/flux-system)
// and the per-file bound (MaxFileBytes). The scan reads what
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

	byPath := map[string]*Root{}
	add := func(p string, d Declaration, field string) {
		if strings.Contains(p, "${") {
			notes = append(notes, fmt.Sprintf("%s: %s %s is written with a variable: not checked (pass --path)", d.Location, field, p))
			return
		}
		root := cleanPath(strings.TrimLeft(p, "/"))
		if !isLocal(root) {
			notes = append(notes, fmt.Sprintf("%s: %s %s is not inside the repository: not checked", d.Location, field, p))
			return
		}
		if fi, err := os.Lstat(filepath.Join(abs, filepath.FromSlash(root))); err != nil || !fi.IsDir() {
			notes = append(notes, fmt.Sprintf("%s: %s %s is not a directory of this repository (another repository's path?): not checked", d.Location, field, p))
			return
		}
		r := byPath[root]
		if r == nil {
			r = &Root{Path: root}
			byPath[root] = r
		}
		if !slices.Contains(r.By, d) {
			r.By = append(r.By, d)
		}
	}
	files := slices.Sorted(maps.Keys(lines))
	for _, rel := range files {
		for _, k := range rootKustomizations(lines[rel], o) {
			root := cleanPath(strings.TrimLeft(k.path, "/"))
			d := Declaration{Form: FormHandApplied, Location: Location{File: rel, Line: k.line}}
			switch {
			case rel == path.Join(root, o.Namespace, SyncFile):
				d.Form = FormBootstrapSync
			case root == "." || strings.HasPrefix(rel, root+"/"):
				d.Form = FormRootKustomization
			}
			add(k.path, d, "spec.path")
		}
		// flux bootstrap's placeholder: <dir>/<namespace>/gotk-sync.yaml
		// with no object (bootstrapRoot's rule).
		if path.Base(rel) == SyncFile && path.Base(path.Dir(rel)) == o.Namespace && holdsNoObject(lines[rel]) {
			add(path.Dir(path.Dir(rel)), Declaration{Form: FormBootstrapPlaceholder, Location: Location{File: rel}}, "its directory")
		}
	}
	for _, s := range ix.syncDeclarations() {
		what := map[string]string{"HelmRelease values": "flux-instance HelmRelease values", "values file": "flux-instance chart values"}[s.how]
		add(s.sync.Path, Declaration{Form: FormFluxInstance, What: what, Location: s.loc}, "spec.sync.path")
	}
	for _, p := range slices.Sorted(maps.Keys(byPath)) {
		r := byPath[p]
		slices.SortStableFunc(r.By, func(a, b Declaration) int { return strings.Compare(a.Location.File, b.Location.File) })
		roots = append(roots, *r)
	}
	// A directory under clusters/ that nothing declares is named: the
	// user may expect it checked.
	if entries, err := os.ReadDir(filepath.Join(abs, "clusters")); err == nil {
		for _, e := range entries {
			p := "clusters/" + e.Name()
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && byPath[p] == nil {
				notes = append(notes, fmt.Sprintf("%s: no root declares it (no Kustomization %s/%s with spec.path ./%s, no %s/%s, no FluxInstance spec.sync.path): not checked; bootstrap check --path %s checks it as a path whose root is made elsewhere", p, o.Namespace, o.RootName, p, o.Namespace, SyncFile, p))
			}
		}
	}
	return roots, notes, nil
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

// rootKustomization is a root Kustomization document of a file: its
// spec.path and the line of that field.
type rootKustomization struct {
	path string
	line int
}

// rootKustomizations reads the documents of a YAML file that are the root
// Kustomization o names (its namespace, when the document sets none, is
// the one kustomize-controller's root has: o.Namespace) with a spec.path.
func rootKustomizations(lines []string, o Options) []rootKustomization {
	b := []byte(strings.Join(lines, "\n"))
	if !bytes.Contains(b, []byte(fluxobj.KustomizeGroup)) {
		return nil
	}
	var out []rootKustomization
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
		if !fluxobj.IsKustomization(scalar(m, "apiVersion"), scalar(m, "kind")) || scalar(md, "name") != o.RootName ||
			fluxobj.NamespaceOr(scalar(md, "namespace"), o.Namespace) != o.Namespace {
			continue
		}
		pn := value(child(m, "spec"), "path")
		if pn == nil || pn.Kind != yaml.ScalarNode || pn.Value == "" {
			continue
		}
		out = append(out, rootKustomization{path: pn.Value, line: pn.Line})
	}
}
