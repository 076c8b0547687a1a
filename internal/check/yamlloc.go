package check

import (
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
)

// objectNode is the YAML mapping node of the object declared at decl (its
// document in decl.File, as the loader read the file: Env.Documents), nil
// when the file is not indexed or holds no object there. Locations come
// from its nodes (yaml.v3 Node.Line), not from searching the text.
func objectNode(env *fluxrepo.Env, decl fluxrepo.Location) *yaml.Node {
	if decl.Line < 1 {
		return nil
	}
	var found *yaml.Node
	for _, doc := range env.Documents(decl.File) {
		if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
			continue
		}
		m := doc.Content[0]
		// The loader's line of an object is its mapping's first key (the
		// kind: key when that comes first): the last document starting at
		// or before decl.Line holds it.
		start := m.Line
		if len(m.Content) > 0 {
			start = min(start, m.Content[0].Line)
		}
		if start > decl.Line {
			break
		}
		found = m
	}
	return found
}

// writtenLines are the lines of the object at l (a line of its document)
// where text is written: in its keys and values (exprLines); else, where
// no scalar holds it (a generator's source that is no YAML object), the
// lines of l's document holding text (Env.Lines).
func writtenLines(env *fluxrepo.Env, l fluxrepo.Location, text string) []int {
	if ls := exprLines(env, l, text, false); ls != nil {
		return ls
	}
	return env.Lines(l.File, l.Line, text)
}

// exprLines are the lines of the object declared at decl where text is
// written (unescaped) in a scalar of its YAML document, a key or a value
// — never a comment, which kustomize drops — each once, in order; the
// first alone when first. A literal block scalar (|) places each
// occurrence by the node: the line after its indicator line, plus the
// lines of the value before it. Another scalar (plain, quoted or folded,
// on one line or several) is read from its first line down to the next
// node for the lines holding its occurrences. Nil when no scalar holds it
// (a patch wrote it, the file is not indexed).
func exprLines(env *fluxrepo.Env, decl fluxrepo.Location, text string, first bool) []int {
	root := objectNode(env, decl)
	if root == nil || text == "" {
		return nil
	}
	// The scalars (and aliases) in document order: each one's lines end
	// where the next one starts.
	var nodes []*yaml.Node
	var flatten func(n *yaml.Node)
	flatten = func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode || n.Kind == yaml.AliasNode {
			nodes = append(nodes, n)
			return
		}
		for _, c := range n.Content {
			flatten(c)
		}
	}
	flatten(root)
	ls := env.FileLines(decl.File)
	docEnd := len(ls)
	for l := root.Line; l < len(ls); l++ {
		if docSeparator(ls[l]) {
			docEnd = l
			break
		}
	}
	var out []int
	add := func(l int) {
		if len(out) == 0 || out[len(out)-1] < l {
			out = append(out, l)
		}
	}
	for i, n := range nodes {
		if n.Kind != yaml.ScalarNode {
			continue
		}
		offs := unescaped(n.Value, text)
		if len(offs) == 0 {
			continue
		}
		if n.Style&yaml.LiteralStyle != 0 {
			for _, off := range offs {
				add(n.Line + 1 + strings.Count(n.Value[:off], "\n"))
			}
		} else {
			end := docEnd // or the line before the next node's
			if i+1 < len(nodes) {
				end = max(n.Line, nodes[i+1].Line-1)
			}
			from := n.Line
			if n.Style&yaml.FoldedStyle != 0 {
				from++ // the indicator line
			}
			// The lines holding the value's occurrences, and no more: a
			// comment below it may quote the same text.
			left := len(offs)
			for l := from; l <= end && left > 0; l++ {
				if k := len(unescaped(ls[l-1], text)); k > 0 {
					add(l)
					left -= k
				}
			}
		}
		if first && len(out) > 0 {
			return out[:1]
		}
	}
	return out
}

// mapValue is the key node and value node of key in mapping m (nil, nil
// when m is not a mapping or has no such key).
func mapValue(m *yaml.Node, key string) (k, v *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

// fieldLocation is where the field at keys (mapping keys from the
// object's top) is written in the object declared at decl: the line of
// its last key. The object's own location when the field is not written
// there (a patch set it) or the file is not indexed.
func fieldLocation(env *fluxrepo.Env, decl fluxrepo.Location, keys ...string) fluxrepo.Location {
	n := objectNode(env, decl)
	var k *yaml.Node
	for _, key := range keys {
		if k, n = mapValue(n, key); k == nil {
			return decl
		}
	}
	return fluxrepo.Location{File: decl.File, Line: k.Line}
}

// entryLocation is where the object declared at decl writes field of the
// first entry named name in the list at keys (spec.dependsOn, or
// spec.postBuild.substituteFrom): the line of that entry's field key; the
// object's own location when no such entry is written there (a patch
// added it).
func entryLocation(env *fluxrepo.Env, decl fluxrepo.Location, name, field string, keys ...string) fluxrepo.Location {
	n := objectNode(env, decl)
	for _, key := range keys {
		_, n = mapValue(n, key)
	}
	if n == nil || n.Kind != yaml.SequenceNode {
		return decl
	}
	for _, e := range n.Content {
		if _, v := mapValue(e, "name"); v != nil && v.Value == name {
			if k, _ := mapValue(e, field); k != nil {
				return fluxrepo.Location{File: decl.File, Line: k.Line}
			}
		}
	}
	return decl
}
