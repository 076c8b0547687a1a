package fluxrepo

import (
	"bytes"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/fluxcd/pkg/envsubst/parse"
	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/konfig"
)

// fileIndex maps objects to the files and lines declaring them, read lazily
// from the private copy.
type fileIndex struct {
	root string
	once sync.Once
	// decl: kind/name -> declarations
	decl map[string][]decl
	// templates: kind -> the declared names written with variables, in
	// the order the files were walked.
	templates map[string][]template
	lines     map[string][]string
	// kustNamespace: directory -> the namespace: its kustomization file
	// sets (kustomize's namespace transformer), where it sets one.
	kustNamespace map[string]string
	// copied are the copy's files as the copy wrote them, in the order of
	// its walk (nil: load reads the disk). load indexes them instead of
	// reading every file of the copy again, then drops them.
	copied []copiedFile
	// docs are the YAML documents of the files asked for (documents),
	// each file decoded once.
	docsMu sync.Mutex
	docs   map[string][]*yaml.Node
}

type copiedFile struct {
	rel string
	b   []byte
}

// template is a declared name with ${…} in it, and what it matches once
// substituted.
type template struct {
	name string
	re   *regexp.Regexp
}

// templateRE matches the names template can substitute to: its text
// literally, each expansion (as fluxcd/pkg/envsubst parses it) any text.
// Nil when the parser rejects it.
func templateRE(template string) *regexp.Regexp {
	tree, err := parse.Parse(template)
	if err != nil {
		return nil
	}
	var b strings.Builder
	b.WriteString("^")
	var add func(parse.Node)
	add = func(n parse.Node) {
		switch n := n.(type) {
		case *parse.ListNode:
			for _, c := range n.Nodes {
				add(c)
			}
		case *parse.TextNode:
			b.WriteString(regexp.QuoteMeta(n.Value))
		default:
			b.WriteString(".*")
		}
	}
	add(tree.Root)
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil
	}
	return re
}

type decl struct {
	namespace string
	loc       Location
}

func (ix *fileIndex) load() {
	ix.once.Do(func() {
		ix.decl = map[string][]decl{}
		ix.templates = map[string][]template{}
		ix.lines = map[string][]string{}
		ix.kustNamespace = map[string]string{}
		if ix.copied != nil {
			for _, f := range ix.copied {
				yamlFile := isYAMLName(f.rel)
				if yamlFile || int64(len(f.b)) <= maxGeneratorSource {
					ix.add(f.rel, f.b, yamlFile)
				}
			}
			ix.copied = nil
			return
		}
		_ = filepath.WalkDir(ix.root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !d.Type().IsRegular() {
				return nil
			}
			yamlFile := isYAMLName(p)
			if !yamlFile && !generatorSource(d) {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return nil
			}
			rel, _ := filepath.Rel(ix.root, p)
			ix.add(filepath.ToSlash(rel), b, yamlFile)
			return nil
		})
	})
}

func isYAMLName(p string) bool {
	ext := filepath.Ext(p)
	return ext == ".yaml" || ext == ".yml"
}

// add indexes the file rel (slash-separated) holding b.
func (ix *fileIndex) add(rel string, b []byte, yamlFile bool) {
	if !yamlFile {
		// A file a configMapGenerator or secretGenerator may read
		// (a dashboard, an env file): its lines, to locate a ${…}
		// where it is written.
		if bytes.Contains(b, []byte("${")) {
			ix.lines[rel] = strings.Split(string(b), "\n")
		}
		return
	}
	ix.lines[rel] = strings.Split(string(b), "\n")
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			break
		}
		if n.Kind != yaml.DocumentNode || len(n.Content) == 0 || n.Content[0].Kind != yaml.MappingNode {
			continue
		}
		m := n.Content[0]
		kind := scalar(m, "kind")
		if ns := scalar(m, "namespace"); ns != "" && slices.Contains(konfig.RecognizedKustomizationFileNames(), path.Base(rel)) {
			ix.kustNamespace[path.Dir(rel)] = ns
		}
		md := child(m, "metadata")
		if kind == "" || md == nil {
			continue
		}
		name := scalar(md, "name")
		line := m.Line
		if k := keyNode(m, "kind"); k != nil {
			line = min(line, k.Line)
		}
		if _, seen := ix.decl[kind+"/"+name]; !seen && strings.Contains(name, "${") {
			if re := templateRE(name); re != nil {
				ix.templates[kind] = append(ix.templates[kind], template{name: name, re: re})
			}
		}
		ix.decl[kind+"/"+name] = append(ix.decl[kind+"/"+name], decl{namespace: scalar(md, "namespace"), loc: Location{File: rel, Line: line}})
	}
}

func keyNode(m *yaml.Node, key string) *yaml.Node {
	if m == nil {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i]
		}
	}
	return nil
}

func child(m *yaml.Node, key string) *yaml.Node {
	if v := value(m, key); v != nil && v.Kind == yaml.MappingNode {
		return v
	}
	return nil
}

// value is the node of key in mapping m, of any kind (nil when absent).
func value(m *yaml.Node, key string) *yaml.Node {
	if m == nil {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func scalar(m *yaml.Node, key string) string {
	if m == nil {
		return ""
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key && m.Content[i+1].Kind == yaml.ScalarNode {
			return m.Content[i+1].Value
		}
	}
	return ""
}

func (ix *fileIndex) locate(files []string, kind, namespace, name string) Location {
	if ix == nil {
		return Location{}
	}
	ix.load()
	cands := ix.decl[kind+"/"+name]
	in := func(f string) bool { return files == nil || slices.Contains(files, f) }
	// Best: same namespace; then no namespace, set to this one by a
	// kustomization file above it (kustomize's namespace transformer:
	// home/netbox is not databases/netbox, both written without one); then
	// no namespace and none other set above; then no namespace; then any.
	for _, want := range []func(d decl) bool{
		func(d decl) bool { return d.namespace == namespace },
		func(d decl) bool {
			return d.namespace == "" && slices.Contains(ix.namespacesAbove(d.loc.File), namespace)
		},
		func(d decl) bool {
			return d.namespace == "" && !slices.ContainsFunc(ix.namespacesAbove(d.loc.File), func(ns string) bool { return ns != namespace })
		},
		func(d decl) bool { return d.namespace == "" },
		func(d decl) bool { return true },
	} {
		for _, d := range cands {
			if in(d.loc.File) && want(d) {
				return d.loc
			}
		}
	}
	// A name written with variables (a component's ${APP}-db) is found
	// under the name its applier substitutes: the declarations of that
	// kind whose name is a template the name instantiates.
	if !strings.Contains(name, "${") {
		for _, t := range ix.templates[kind] {
			if !t.re.MatchString(name) {
				continue
			}
			for _, d := range ix.decl[kind+"/"+t.name] {
				if in(d.loc.File) && (d.namespace == "" || d.namespace == namespace || strings.Contains(d.namespace, "${")) {
					return d.loc
				}
			}
		}
	}
	// A name the build set (a component's placeholder renamed by a
	// namespace: or namePrefix transformer): the one declaration of that
	// kind among the files read, if there is exactly one.
	if files != nil {
		var only *Location
		for key, ds := range ix.decl {
			if k, _, _ := strings.Cut(key, "/"); k != kind {
				continue
			}
			for _, d := range ds {
				if in(d.loc.File) {
					if only != nil {
						return Location{}
					}
					l := d.loc
					only = &l
				}
			}
		}
		if only != nil {
			return *only
		}
	}
	return Location{}
}

// namespacesAbove are the namespaces the kustomization files in the
// directories holding file rel set, nearest first.
func (ix *fileIndex) namespacesAbove(rel string) []string {
	var out []string
	for d := path.Dir(rel); ; d = path.Dir(d) {
		if ns, ok := ix.kustNamespace[d]; ok {
			out = append(out, ns)
		}
		if d == "." || d == "/" {
			return out
		}
	}
}

func (ix *fileIndex) findLine(files []string, prefer, text string) Location {
	if ix == nil || text == "" {
		return Location{}
	}
	ix.load()
	search := func(f string) Location {
		for i, l := range ix.lines[f] {
			if containsUnescaped(l, text) {
				return Location{File: f, Line: i + 1}
			}
		}
		return Location{}
	}
	if prefer != "" {
		if l := search(prefer); l.File != "" {
			return l
		}
	}
	if files == nil {
		files = slices.Sorted(maps.Keys(ix.lines))
	}
	for _, f := range files {
		if l := search(f); l.File != "" {
			return l
		}
	}
	return Location{}
}

// containsUnescaped says whether line contains text; for text starting with
// "${", an occurrence escaped as "$${" does not count.
func containsUnescaped(line, text string) bool {
	for off := 0; ; {
		i := strings.Index(line[off:], text)
		if i < 0 {
			return false
		}
		i += off
		if !strings.HasPrefix(text, "${") || i == 0 || line[i-1] != '$' {
			return true
		}
		off = i + 1
	}
}
