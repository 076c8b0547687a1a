package check

import (
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
)

// objectNode is the YAML mapping node of the object declared at decl (its
// document in decl.File, as the loader read the file: Env.FileLines), nil
// when the file is not indexed or holds no object there. Locations come
// from its nodes (yaml.v3 Node.Line), not from searching the text.
func objectNode(env *fluxrepo.Env, decl fluxrepo.Location) *yaml.Node {
	ls := env.FileLines(decl.File)
	if len(ls) == 0 || decl.Line < 1 {
		return nil
	}
	dec := yaml.NewDecoder(strings.NewReader(strings.Join(ls, "\n")))
	var found *yaml.Node
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			break
		}
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
