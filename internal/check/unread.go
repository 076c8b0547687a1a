package check

import (
	"strings"

	"sigs.k8s.io/kustomize/api/resource"
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
