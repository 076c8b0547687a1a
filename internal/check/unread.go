package check

import (
	"strings"

	"sigs.k8s.io/kustomize/api/resource"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
)

// unread says where every occurrence of text in r is text no program
// reads, "" when one is read (or text is not found): a line whose first
// non-space character is # in an embedded file (a multi-line
// ConfigMap/Secret data value, or a script: see embedded), or the
// description of a CustomResourceDefinition (apiextensions.k8s.io), which
// the API server keeps as documentation only.
func unread(r *resource.Resource, text string) string {
	m, err := r.Map()
	if err != nil {
		return ""
	}
	crd := r.GetKind() == "CustomResourceDefinition" && strings.HasPrefix(r.GetApiVersion(), "apiextensions.k8s.io/")
	where, read := "", false
	eachString(m, nil, func(v string, keys []string) {
		offs := unescaped(v, text)
		if len(offs) == 0 {
			return
		}
		last := ""
		if len(keys) > 0 {
			last = keys[len(keys)-1]
		}
		if crd && last == "description" {
			where = "a description"
			return
		}
		if !strings.Contains(v, "\n") || !embedded(r, keys) {
			read = true
			return
		}
		for _, off := range offs {
			start := strings.LastIndexByte(v[:off], '\n') + 1
			if !strings.HasPrefix(strings.TrimLeft(v[start:off], " \t"), "#") {
				read = true
				return
			}
		}
		if where == "" {
			where = "a commented-out line of " + last
		}
	})
	if read {
		return ""
	}
	return where
}

// embedded says the string at keys of r is an embedded file: a
// ConfigMap/Secret data or stringData value, or a script (as inScript
// reads one: under a container's command or args, or a script key).
func embedded(r *resource.Resource, keys []string) bool {
	last := ""
	if len(keys) > 0 {
		last = keys[len(keys)-1]
	}
	switch {
	case (r.GetKind() == "ConfigMap" || r.GetKind() == "Secret") && len(keys) == 2 && (keys[0] == "data" || keys[0] == "stringData"):
		return true
	case last == "script" || strings.HasSuffix(last, "Script"):
		return true
	}
	for _, k := range keys {
		if k == "command" || k == "args" {
			return true
		}
	}
	return false
}

// unescaped are the offsets of text in s, leaving out, for text starting
// with "${", those escaped as "$${" (which the controller's envsubst
// renders as the literal "${").
func unescaped(s, text string) []int {
	var out []int
	for off := 0; off < len(s); {
		i := strings.Index(s[off:], text)
		if i < 0 {
			break
		}
		i += off
		if !strings.HasPrefix(text, "${") || i == 0 || s[i-1] != '$' {
			out = append(out, i)
		}
		off = i + 1
	}
	return out
}

// lineInObject is the line of text in the object declared at decl, found
// through the YAML nodes of its document (kyaml): the first scalar holding
// text and, in a multi-line scalar, the line of text in it — so a YAML
// comment, or a field above it, mentioning the same text does not take its
// place. The zero Location when the document does not hold it.
func lineInObject(env *fluxrepo.Env, decl fluxrepo.Location, text string) fluxrepo.Location {
	ls := env.FileLines(decl.File)
	if decl.File == "" || decl.Line < 1 || decl.Line > len(ls) {
		return fluxrepo.Location{}
	}
	from, to := 0, len(ls)
	for i := decl.Line - 1; i >= 0; i-- {
		if docSeparator(ls[i]) && i != decl.Line-1 {
			from = i + 1
			break
		}
	}
	for i := decl.Line; i < len(ls); i++ {
		if docSeparator(ls[i]) {
			to = i
			break
		}
	}
	// The first line with text is the place unless it reads as a YAML
	// comment: then the nodes say whether it is one (kustomize drops it)
	// or a # line of a block scalar. Parsing only then keeps a repository
	// with many findings in one large document (a CRD) cheap.
	first := -1
	for i := from; i < to; i++ {
		if len(unescaped(ls[i], text)) > 0 {
			first = i
			break
		}
	}
	if first < 0 {
		return fluxrepo.Location{}
	}
	if !strings.HasPrefix(strings.TrimSpace(ls[first]), "#") {
		return fluxrepo.Location{File: decl.File, Line: first + 1}
	}
	doc, err := kyaml.Parse(strings.Join(ls[from:to], "\n"))
	if err != nil {
		return fluxrepo.Location{}
	}
	line := 0
	var visit func(n *kyaml.Node)
	visit = func(n *kyaml.Node) {
		if n == nil || line > 0 {
			return
		}
		if n.Kind == kyaml.ScalarNode && len(unescaped(n.Value, text)) > 0 {
			// From the scalar's first line (its indicator line for a block
			// scalar) to the end of the document, the first line with text.
			for i := from + n.Line - 1; i < to; i++ {
				if len(unescaped(ls[i], text)) > 0 {
					line = i + 1
					return
				}
			}
		}
		for _, c := range n.Content {
			visit(c)
		}
	}
	visit(doc.YNode())
	if line == 0 {
		return fluxrepo.Location{}
	}
	return fluxrepo.Location{File: decl.File, Line: line}
}

// docSeparator says whether l starts a new YAML document: "---" alone or
// followed by a comment.
func docSeparator(l string) bool {
	t := strings.TrimRight(l, " \t\r")
	if t == "---" {
		return true
	}
	rest, ok := strings.CutPrefix(t, "---")
	return ok && (rest[0] == ' ' || rest[0] == '\t') && strings.HasPrefix(strings.TrimLeft(rest, " \t"), "#")
}
