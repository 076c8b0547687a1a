package bootstrapfiles

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"go.yaml.in/yaml/v3"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/safeio"
)

// helmfilePlaces are where a repository keeps the helmfile its bootstrap
// runs (DESIGN §12): at the root, in bootstrap/, and helmfile.d/ there.
var helmfilePlaces = []string{"helmfile.yaml", "helmfile.yaml.gotmpl", "bootstrap/helmfile.yaml", "bootstrap/helmfile.yaml.gotmpl"}

// helmfileDirs hold one helmfile per file, applied in name order.
var helmfileDirs = []string{"helmfile.d", "bootstrap/helmfile.d"}

// helmfiles reads the releases of the bootstrap's helmfiles.
func (r *reader) helmfiles() {
	files := slices.Clone(helmfilePlaces)
	for _, d := range helmfileDirs {
		entries, _ := os.ReadDir(filepath.Join(r.repo, d))
		for _, e := range entries {
			if n := e.Name(); e.Type().IsRegular() && (strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml") || strings.HasSuffix(n, ".yaml.gotmpl")) {
				files = append(files, path.Join(d, n))
			}
		}
	}
	for _, f := range files {
		if st, err := os.Lstat(filepath.Join(r.repo, f)); err != nil || !st.Mode().IsRegular() {
			continue
		}
		r.helmfile(f)
	}
}

// helmfile reads one helmfile as helmfile does only as far as its
// releases go: rendered as a Go template (sprig's functions; helmfile's
// own, and anything reading the environment, files or commands, stand in
// as empty: names and charts do not need them), then its YAML documents'
// releases. A template that fails is a note; the file is skipped.
func (r *reader) helmfile(rel string) {
	b, err := safeio.ReadFile(filepath.Join(r.repo, rel), rel)
	if err != nil {
		r.notef("%s not read: %v", rel, err)
		return
	}
	var out bytes.Buffer
	t, err := template.New(rel).Funcs(helmfileFuncs()).Option("missingkey=zero").Parse(string(b))
	if err == nil {
		err = t.Execute(&out, map[string]any{"Values": map[string]any{}, "StateValues": map[string]any{},
			"Environment": map[string]any{"Name": "default", "Values": map[string]any{}}})
	}
	if err != nil {
		r.b.Files = append(r.b.Files, rel)
		r.notef("%s: its template does not render offline (%v): its releases are not read", rel, err)
		return
	}
	if line, why := safeio.AliasBomb(out.Bytes()); why != "" {
		r.notef("%s: %s", fluxrepo.Location{File: rel, Line: line}, why)
		return
	}
	lines := strings.Split(string(b), "\n")
	from := 0
	err = eachDocument(&out, func(doc *yaml.Node) {
		rels := mapValue(doc, "releases")
		if rels == nil || rels.Kind != yaml.SequenceNode {
			return // values, or another kind of file
		}
		r.b.Files = append(r.b.Files, rel)
		for i := from; i < len(lines); i++ {
			if strings.HasPrefix(lines[i], "releases:") {
				from = i
				break
			}
		}
		for _, n := range rels.Content {
			rl := releaseOf(n)
			if rl.Name == "" {
				continue
			}
			// The rendered line, moved to the written one when the
			// template changed the line count.
			rl.Location = fluxrepo.Location{File: rel, Line: n.Line}
			for i := from; i < len(lines); i++ {
				l := strings.TrimPrefix(strings.TrimSpace(lines[i]), "- ")
				if v, ok := strings.CutPrefix(l, "name:"); ok && strings.Trim(strings.TrimSpace(v), `"'`) == rl.Name {
					rl.Location.Line, from = i+1, i+1
					break
				}
			}
			r.b.Releases = append(r.b.Releases, rl)
		}
	})
	if err != nil {
		r.notef("%s does not parse as YAML once rendered: %v", rel, err)
	}
}

// releaseOf reads one release: name, namespace, chart, version and the
// values files it names (inline values are not files).
func releaseOf(n *yaml.Node) Release {
	var rl Release
	for _, f := range []struct {
		key string
		to  *string
	}{{"name", &rl.Name}, {"namespace", &rl.Namespace}, {"chart", &rl.Chart}, {"version", &rl.Version}} {
		if v := mapValue(n, f.key); v != nil && v.Kind == yaml.ScalarNode {
			*f.to = v.Value
		}
	}
	if vs := mapValue(n, "values"); vs != nil && vs.Kind == yaml.SequenceNode {
		for _, v := range vs.Content {
			if v.Kind == yaml.ScalarNode {
				rl.Values = append(rl.Values, v.Value)
			}
		}
	}
	return rl
}

// helmfileFuncs are sprig's functions with everything that reads the
// process environment, a file or a command made empty, and helmfile's own
// functions as stand-ins: a read never runs or reads anything for a
// template, and never sees a secret.
func helmfileFuncs() template.FuncMap {
	f := sprig.TxtFuncMap()
	empty := func(...any) string { return "" }
	// An environment variable shows as its name: a values path stays
	// readable, and no value is read.
	name := func(n string) string { return "$" + n }
	f["env"], f["requiredEnv"] = name, name
	for _, n := range []string{"expandenv", "exec", "readFile", "readDir", "readDirEntries",
		"fetchSecretValue", "expandSecretRefs", "include", "tpl", "toYaml", "isFile", "isDir"} {
		f[n] = empty
	}
	f["fromYaml"] = func(...any) map[string]any { return map[string]any{} }
	f["get"] = func(args ...any) any {
		if len(args) == 3 {
			return args[1] // get path default map: the default
		}
		return nil
	}
	f["getOrNil"] = func(...any) any { return nil }
	f["required"] = func(_ string, v any) any { return v }
	f["setValueAtPath"] = func(...any) (string, error) { return "", fmt.Errorf("setValueAtPath is not evaluated offline") }
	return f
}
