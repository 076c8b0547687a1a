package bootstrapfiles

import (
	"bytes"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/safeio"
)

// templateDirs hold the resources templates a bootstrap renders (through a
// secret manager: op inject, makejinja) and applies before Flux.
var templateDirs = []string{"bootstrap", "bootstrap/templates"}

// placeholder stands for a template expression once neutralized: a plain
// scalar, so the YAML around it parses as written.
const placeholder = "__template__"

// templates reads the Secrets and ConfigMaps of the resources templates:
// kind, name, namespace and keys; the values (template expressions,
// op:// references) are never read.
func (r *reader) templates() {
	for _, d := range templateDirs {
		entries, _ := os.ReadDir(filepath.Join(r.repo, d))
		for _, e := range entries {
			n := e.Name()
			if !e.Type().IsRegular() || !(strings.HasSuffix(n, ".yaml.j2") || strings.HasSuffix(n, ".yml.j2") || strings.HasSuffix(n, ".yaml.tpl")) {
				continue
			}
			r.template(path.Join(d, n))
		}
	}
}

// template reads one resources template as YAML once its tags are
// neutralized (neutralize: line for line, so every location holds).
func (r *reader) template(rel string) {
	b, err := safeio.ReadFile(filepath.Join(r.repo, rel), rel)
	if err != nil {
		r.notef("%s not read: %v", rel, err)
		return
	}
	r.b.Files = append(r.b.Files, rel)
	text, control := neutralize(b)
	if line, why := safeio.AliasBomb(text); why != "" {
		r.notef("%s: %s", fluxrepo.Location{File: rel, Line: line}, why)
		return
	}
	if control {
		r.notef("%s has template control flow ({%% … %%}): its objects are read as written once", rel)
	}
	err = eachDocument(bytes.NewReader(text), func(n *yaml.Node) {
		o, ok := objectOf(n, "")
		if !ok || strings.Contains(o.Name, placeholder) || strings.Contains(o.Namespace, placeholder) {
			if ok {
				r.notef("%s:%d: a %s whose name or namespace is templated: not read", rel, n.Line, o.Kind)
			}
			return
		}
		if o.Namespace == "" {
			o.Namespace = "default"
		}
		if i := slices.IndexFunc(o.Keys, func(k string) bool { return strings.Contains(k, placeholder) }); i >= 0 {
			o.Keys, o.Open = slices.DeleteFunc(o.Keys, func(k string) bool { return strings.Contains(k, placeholder) }), true
		}
		line := n.Line
		if nm := mapValue(mapValue(n, "metadata"), "name"); nm != nil {
			line = nm.Line
		}
		o.Location = fluxrepo.Location{File: rel, Line: line}
		o.How = "resources template " + rel + " (rendered and applied by the bootstrap; values not read)"
		r.addObject(o)
	})
	if err != nil {
		r.notef("%s does not parse as YAML once its template tags are set aside (%v): its objects are not read", rel, err)
	}
}

// neutralize sets a template's tags aside, line for line: an expression
// {{ … }} becomes a plain placeholder scalar; a statement {% … %} or a
// comment {# … #} becomes nothing, and a line holding only such tags a
// YAML comment. control says a statement was there.
func neutralize(b []byte) (out []byte, control bool) {
	s := string(b)
	var w strings.Builder
	for len(s) > 0 {
		i := strings.Index(s, "{")
		if i < 0 || i+1 >= len(s) || !strings.ContainsRune("{%#", rune(s[i+1])) {
			if i < 0 || i+1 >= len(s) {
				w.WriteString(s)
				break
			}
			w.WriteString(s[:i+1])
			s = s[i+1:]
			continue
		}
		w.WriteString(s[:i])
		closer := map[byte]string{'{': "}}", '%': "%}", '#': "#}"}[s[i+1]]
		j := strings.Index(s[i+2:], closer)
		if j < 0 {
			w.WriteString(s[i:])
			break
		}
		tag := s[i : i+2+j+len(closer)]
		if s[i+1] == '{' {
			w.WriteString(placeholder)
		} else {
			control = control || s[i+1] == '%'
		}
		// Keep the line count.
		w.WriteString(strings.Repeat("\n", strings.Count(tag, "\n")))
		s = s[i+len(tag):]
	}
	lines := strings.Split(w.String(), "\n")
	orig := strings.Split(string(b), "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) == "" && i < len(orig) && strings.TrimSpace(orig[i]) != "" {
			lines[i] = "#"
		}
	}
	return []byte(strings.Join(lines, "\n")), control
}
