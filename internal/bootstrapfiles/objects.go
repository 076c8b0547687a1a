package bootstrapfiles

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/safeio"
)

// The Flux install a bootstrap applies, as DESIGN §10 lists its forms: a
// kustomize remote base of flux2's manifests/install at a ref, or a
// release's install.yaml.
const (
	flux2Install  = "github.com/fluxcd/flux2/manifests/install"
	flux2Releases = "github.com/fluxcd/flux2/releases/download/"
)

// fluxInstallVersion is the release a resources entry or URL installs
// ("" when it is not a Flux install).
func fluxInstallVersion(entry string) string {
	e := strings.TrimPrefix(strings.TrimPrefix(entry, "https://"), "http://")
	if strings.HasPrefix(e, flux2Install) {
		_, q, _ := strings.Cut(e, "?")
		for _, kv := range strings.Split(q, "&") {
			if v, ok := strings.CutPrefix(kv, "ref="); ok && v != "" {
				return v
			}
		}
		return ""
	}
	if rest, ok := strings.CutPrefix(e, flux2Releases); ok {
		v, file, _ := strings.Cut(rest, "/")
		if file == "install.yaml" {
			return v
		}
	}
	return ""
}

// applyFile reads kubectl apply -f of p (a file, a directory, a URL).
func (r *reader) applyFile(k kubectl, p string, s step, how string) {
	if p == unknownWord {
		r.notef("%s: kubectl apply at %s names its file through a shell variable: not read", s.how, s.at)
		return
	}
	if strings.HasPrefix(p, "http://") || strings.HasPrefix(p, "https://") {
		if v := fluxInstallVersion(p); v != "" {
			r.b.Installs = append(r.b.Installs, Install{Version: v, Location: s.at, How: s.how + ": kubectl apply -f " + p})
			return
		}
		r.notef("%s: kubectl apply -f %s at %s: a URL, not read offline", s.how, p, s.at)
		return
	}
	rel, ok := r.rel(s.abs(p))
	if !ok {
		r.notef("%s: kubectl apply at %s reads %s, outside the repository: not read", s.how, s.at, s.shown(p))
		return
	}
	st, err := os.Stat(filepath.Join(r.repo, rel))
	if err != nil {
		r.notef("%s: kubectl apply at %s reads %s, which is not in the repository (a variable go-task resolves only when it runs?): not read", s.how, s.at, rel)
		return
	}
	files := []string{rel}
	if st.IsDir() {
		files = r.manifestsIn(rel, len(k.values("--recursive")) > 0)
	}
	for _, f := range files {
		r.b.Files = append(r.b.Files, f)
		for _, o := range r.objectsIn(f, k.namespace()) {
			o.Location, o.How, o.Source = s.at, s.how+": "+how, f
			r.addObject(o)
		}
	}
}

// manifestsIn are the files kubectl apply -f DIR reads: .json, .yaml and
// .yml, below it with --recursive.
func (r *reader) manifestsIn(dir string, recursive bool) []string {
	var out []string
	_ = filepath.WalkDir(filepath.Join(r.repo, dir), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := r.rel(p)
		if d.IsDir() {
			if rel != dir && !recursive {
				return filepath.SkipDir
			}
			return nil
		}
		if slices.Contains([]string{".json", ".yaml", ".yml"}, path.Ext(rel)) {
			out = append(out, rel)
		}
		return nil
	})
	return out
}

// objectsIn reads the objects of a manifest file (a SOPS file too: its
// keys are in clear, its values not read). ns is kubectl's -n.
func (r *reader) objectsIn(rel, ns string) []Object {
	b, err := safeio.ReadFile(filepath.Join(r.repo, rel), rel)
	if err != nil {
		r.notef("%s not read: %v", rel, err)
		return nil
	}
	if line, why := safeio.AliasBomb(b); why != "" {
		r.notef("%s: %s", fluxrepo.Location{File: rel, Line: line}, why)
		return nil
	}
	var out []Object
	err = eachDocument(bytes.NewReader(b), func(n *yaml.Node) {
		if o, ok := objectOf(n, ns); ok {
			out = append(out, o)
		}
	})
	if err != nil {
		r.notef("%s does not parse as YAML: %v", rel, err)
	}
	return out
}

// eachDocument calls f with the top node of every non-empty YAML document
// rd holds, in order, up to the first that does not decode (its error).
func eachDocument(rd io.Reader, f func(*yaml.Node)) error {
	dec := yaml.NewDecoder(rd)
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(doc.Content) > 0 {
			f(doc.Content[0])
		}
	}
}

// objectOf is the object of one manifest node: kind, name, namespace
// (metadata's, else kubectl's -n, else default for a ConfigMap or
// Secret) and its data/stringData keys.
func objectOf(n *yaml.Node, ns string) (Object, bool) {
	kind, meta := mapValue(n, "kind"), mapValue(n, "metadata")
	name := mapValue(meta, "name")
	if kind == nil || name == nil || kind.Kind != yaml.ScalarNode || name.Kind != yaml.ScalarNode {
		return Object{}, false
	}
	o := Object{Kind: kind.Value, Name: name.Value, Namespace: ns}
	if v := mapValue(meta, "namespace"); v != nil && v.Kind == yaml.ScalarNode {
		o.Namespace = v.Value
	}
	if o.Kind != "Secret" && o.Kind != "ConfigMap" {
		return o, true
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	for _, f := range []string{"data", "stringData", "binaryData"} {
		d := mapValue(n, f)
		if d == nil || d.Kind != yaml.MappingNode {
			continue
		}
		for i := 0; i+1 < len(d.Content); i += 2 {
			o.Keys = append(o.Keys, d.Content[i].Value)
		}
	}
	return o, true
}

// applyKustomize reads kubectl apply -k DIR: the Flux install it names
// (a remote flux2 base), else its objects as kubectl's kustomize builds
// them (krusty, kubectl's default options). A directory with another
// remote entry is not built: this read is offline.
func (r *reader) applyKustomize(k kubectl, dir string, s step) {
	if dir == unknownWord {
		r.notef("%s: kubectl apply -k at %s names its directory through a shell variable: not read", s.how, s.at)
		return
	}
	how := s.how + ": kubectl apply --kustomize " + s.shown(dir)
	rel, ok := r.rel(s.abs(dir))
	if !ok {
		r.notef("%s: kubectl apply -k at %s reads %s, outside the repository: not read", s.how, s.at, s.shown(dir))
		return
	}
	remote, installs := r.remoteEntries(rel, 0)
	for _, in := range installs {
		in.How = how + " (" + s.at.String() + ")"
		r.b.Installs = append(r.b.Installs, in)
	}
	if len(remote) > 0 || len(installs) > 0 {
		if len(remote) > 0 {
			r.notef("%s at %s: %s has remote entries (%s): its objects are not read offline", how, s.at, rel, strings.Join(remote, ", "))
		}
		return
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(r.repo, rel))
	if err != nil {
		r.notef("%s at %s: %s does not build: %v", how, s.at, rel, err)
		return
	}
	ns := k.namespace()
	for _, res := range m.Resources() {
		o := Object{Kind: res.GetKind(), Name: res.GetName(), Namespace: res.GetNamespace(), Location: s.at, How: how, Source: rel}
		if o.Namespace == "" {
			o.Namespace = ns
		}
		if o.Kind == "Secret" || o.Kind == "ConfigMap" {
			if o.Namespace == "" {
				o.Namespace = "default"
			}
			m, _ := res.Map()
			for _, f := range []string{"data", "stringData", "binaryData"} {
				if d, ok := m[f].(map[string]any); ok {
					for key := range d {
						o.Keys = append(o.Keys, key)
					}
				}
			}
		}
		r.addObject(o)
	}
}

// remoteEntries are the entries of the kustomization in dir (and of the
// local directories it lists) that are not in the repository, and the
// Flux installs among them (located at their line).
func (r *reader) remoteEntries(dir string, depth int) (remote []string, installs []Install) {
	if depth > 8 {
		return nil, nil
	}
	var kfile string
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		if st, err := os.Stat(filepath.Join(r.repo, dir, n)); err == nil && st.Mode().IsRegular() {
			kfile = path.Join(dir, n)
			break
		}
	}
	if kfile == "" {
		return nil, nil
	}
	r.b.Files = append(r.b.Files, kfile)
	b, err := safeio.ReadFile(filepath.Join(r.repo, kfile), kfile)
	if err != nil {
		return []string{kfile}, nil
	}
	var doc yaml.Node
	if yaml.Unmarshal(b, &doc) != nil || len(doc.Content) == 0 {
		return nil, nil // kustomize says why when it builds
	}
	for _, field := range []string{"resources", "bases", "components"} {
		seq := mapValue(doc.Content[0], field)
		if seq == nil || seq.Kind != yaml.SequenceNode {
			continue
		}
		for _, e := range seq.Content {
			if v := fluxInstallVersion(e.Value); v != "" {
				installs = append(installs, Install{Version: v, Location: fluxrepo.Location{File: kfile, Line: e.Line}})
				continue
			}
			local := path.Join(dir, e.Value)
			st, err := os.Stat(filepath.Join(r.repo, local))
			switch {
			case err != nil:
				remote = append(remote, e.Value)
			case st.IsDir():
				rem, ins := r.remoteEntries(local, depth+1)
				remote, installs = append(remote, rem...), append(installs, ins...)
			}
		}
	}
	return remote, installs
}
