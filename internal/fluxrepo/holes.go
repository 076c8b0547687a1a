package fluxrepo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	fluxkustomize "github.com/fluxcd/pkg/kustomize"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resource"
	kustypes "sigs.k8s.io/kustomize/api/types"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/yaml"
)

// This file makes what the tool cannot read a hole, not a wall (issue 45,
// Options.Holes): entries of kustomization files left out of a build, in
// the private copy only, each recorded with its file and line.

// entry is one file reference of a kustomization file.
type entry struct {
	field string // resources, components, bases, configMapGenerator[x].files …
	value string // as written
	path  string // the file or directory it names (value without a key=)
	dir   bool   // resources, components, bases: may name a directory
	// drop removes it from the parsed kustomization (kyaml).
	drop func(*kyaml.RNode) error
}

// entries lists the file references of a kustomization file's node.
func entries(n *kyaml.RNode) []entry {
	var out []entry
	for _, field := range []string{"resources", "components", "bases"} {
		for _, v := range seqValues(n, field) {
			field, v := field, v
			out = append(out, entry{field: field, value: v, path: v, dir: true, drop: func(n *kyaml.RNode) error { return dropValue(n, v, field) }})
		}
	}
	// A patch read from a file: the whole patch is the entry.
	if seq, err := n.Pipe(kyaml.Lookup("patches")); err == nil && seq != nil && seq.YNode().Kind == kyaml.SequenceNode {
		for i, pn := range seq.Content() {
			f := kyaml.NewRNode(pn).Field("path")
			if f == nil || f.Value == nil || f.Value.YNode().Kind != kyaml.ScalarNode {
				continue
			}
			v, i := f.Value.YNode().Value, i
			out = append(out, entry{field: "patches", value: v, path: v, drop: func(n *kyaml.RNode) error {
				k := indexOf(n, "patches")
				ps := n.YNode().Content[k+1]
				ps.Content = slices.Delete(slices.Clone(ps.Content), i, i+1)
				keepValid(n.YNode().Content[k], ps)
				return nil
			}})
		}
	}
	for _, gen := range []string{"configMapGenerator", "secretGenerator"} {
		seq, err := n.Pipe(kyaml.Lookup(gen))
		if err != nil || seq == nil || seq.YNode().Kind != kyaml.SequenceNode {
			continue
		}
		for i, g := range seq.Content() {
			name := fmt.Sprint(i)
			if nn := kyaml.NewRNode(g).Field("name"); nn != nil && nn.Value != nil {
				name = nn.Value.YNode().Value
			}
			for _, field := range []string{"files", "envs"} {
				for _, v := range seqValues(kyaml.NewRNode(g), field) {
					field, v, i := field, v, i
					p := v
					if _, after, ok := strings.Cut(v, "="); ok && field == "files" {
						p = after
					}
					out = append(out, entry{field: fmt.Sprintf("%s[%s].%s", gen, name, field), value: v, path: p, drop: func(n *kyaml.RNode) error {
						return dropValue(kyaml.NewRNode(n.YNode().Content[indexOf(n, gen)+1].Content[i]), v, field)
					}})
				}
			}
		}
	}
	return out
}

// indexOf is the key index of field in mapping n's content.
func indexOf(n *kyaml.RNode, field string) int {
	c := n.YNode().Content
	for i := 0; i+1 < len(c); i += 2 {
		if c[i].Value == field {
			return i
		}
	}
	return -1
}

// seqValues are the scalar values of the sequence field of mapping n.
func seqValues(n *kyaml.RNode, field string) []string {
	f := n.Field(field)
	if f == nil || f.Value == nil || f.Value.YNode().Kind != kyaml.SequenceNode {
		return nil
	}
	var out []string
	for _, c := range f.Value.Content() {
		if c.Kind == kyaml.ScalarNode {
			out = append(out, c.Value)
		}
	}
	return out
}

// dropValue removes the first scalar value v of the sequence field of n.
func dropValue(n *kyaml.RNode, v, field string) error {
	f := n.Field(field)
	if f == nil || f.Value == nil {
		return fmt.Errorf("no %s", field)
	}
	c := f.Value.YNode().Content
	for i, e := range c {
		if e.Kind == kyaml.ScalarNode && e.Value == v {
			f.Value.YNode().Content = slices.Delete(slices.Clone(c), i, i+1)
			keepValid(f.Key.YNode(), f.Value.YNode())
			return nil
		}
	}
	return fmt.Errorf("no %q in %s", v, field)
}

// keepValid keeps a sequence that dropping emptied valid YAML: an empty
// block sequence is written as "[]" on the line after its key, which a
// comment on the key (`files: # TODO`) turns into text no parser reads
// (issue 55: a hole must never create an error). Written in flow style,
// with the key's comment after it: `files: [] # TODO`.
func keepValid(key, seq *kyaml.Node) {
	if len(seq.Content) > 0 {
		return
	}
	seq.Style = kyaml.FlowStyle
	if seq.LineComment == "" {
		seq.LineComment = key.LineComment
	}
	key.LineComment = ""
}

// entryLine is the line of value v in the text of a kustomization file, 0
// when not found.
func entryLine(b []byte, v string) int {
	for i, line := range strings.Split(string(b), "\n") {
		t := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "-"))
		t = strings.TrimSpace(strings.TrimPrefix(t, "path:")) // a patch's path
		if before, _, ok := strings.Cut(t, " #"); ok {
			t = strings.TrimSpace(before)
		}
		if strings.Trim(t, `"'`) == v {
			return i + 1
		}
	}
	return 0
}

// kustomizationFile is the kustomization file of dir (absolute), "" when
// it has none.
func kustomizationFile(dir string) string {
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		if st, err := os.Lstat(filepath.Join(dir, n)); err == nil && st.Mode().IsRegular() {
			return filepath.Join(dir, n)
		}
	}
	return ""
}

// offlineWhy says why the tool cannot read entry e of a kustomization file
// in dir (absolute, in the copy) offline: a remote reference, or a file
// left out of the copy for its size; "" when it can.
func (l *loader) offlineWhy(dir string, e entry) string {
	switch remoteForm(e) {
	case remoteBase:
		return "a remote base, which kustomize-controller clones when it builds (unless run with --no-remote-bases) and this offline check cannot"
	case remoteFile:
		what := "a remote file"
		if strings.HasPrefix(e.field, "configMapGenerator") || strings.HasPrefix(e.field, "secretGenerator") {
			what = "a remote generator file"
		}
		return what + ", which kustomize-controller fetches when it builds and this offline check cannot"
	}
	rel, err := filepath.Rel(l.tmp, filepath.Join(dir, filepath.FromSlash(e.path)))
	if err == nil && l.big[filepath.ToSlash(rel)] {
		return l.overBound(filepath.ToSlash(rel))
	}
	return ""
}

// overBound is why file rel (over the read bound) was not read.
func (l *loader) overBound(rel string) string {
	max := l.env.Options.MaxFileBytes
	return fmt.Sprintf("a file over this tool's read bound: %s is larger than %s, so it was left out of the copy and not read (no flag or policy raises the bound, fluxrepo.DefaultMaxFileBytes); source-controller archives it", rel, bytesText(max))
}

// leaveOutOffline removes from every kustomization file of the copy the
// entries the tool cannot read offline and records each in Env.Holes.
// Nothing remote is ever fetched.
func (l *loader) leaveOutOffline() error {
	return filepath.WalkDir(l.tmp, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !slices.Contains(konfig.RecognizedKustomizationFileNames(), d.Name()) || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(l.tmp, p)
		if l.bombs[filepath.ToSlash(rel)] != nil {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n, err := kyaml.Parse(string(b))
		if err != nil || n.YNode().Kind != kyaml.MappingNode {
			return nil // the build reports it
		}
		var drop []entry
		fetched := false
		for _, e := range entries(n) {
			why := l.offlineWhy(filepath.Dir(p), e)
			form := remoteForm(e)
			if why != "" && l.env.Options.FetchRemote && (form == remoteFile && isHTTP(e.path) || form == remoteBase) {
				fetch := l.fetch
				if form == remoteBase {
					fetch = l.fetchBase
				}
				local, err := fetch(filepath.Dir(p), e.path)
				if err == nil {
					replaceValue(n, e.value, strings.Replace(e.value, e.path, local, 1))
					fetched = true
					continue
				}
				why += "; --fetch-remote could not fetch it: " + err.Error()
			}
			if why != "" {
				drop = append(drop, e)
				l.env.Holes = append(l.env.Holes, &Hole{Location: Location{File: filepath.ToSlash(rel), Line: entryLine(b, e.value)}, Field: e.field, Entry: e.value, Offline: true, Why: why})
			}
		}
		if len(drop) == 0 && !fetched {
			return nil
		}
		// Dropped last first: a generator file's drop finds its generator by index.
		for _, e := range slices.Backward(drop) {
			if err := e.drop(n); err != nil {
				return fmt.Errorf("%s: leave out %s entry %q: %w", rel, e.field, e.value, err)
			}
		}
		s, err := n.String()
		if err != nil {
			return err
		}
		return rewriteFile(p, []byte(s))
	})
}

// attribute records that the build by (a Kustomization, "" the root
// directory) read files: the offline holes of those files are its.
func (l *loader) attribute(files []string, by string) {
	for _, h := range l.env.Holes {
		if slices.Contains(files, h.Location.File) && !slices.Contains(h.By, by) {
			h.By = append(h.By, by)
		}
	}
}

// buildRepaired is buildIn, and when the build fails and Options.Holes is
// set, the same build again without the entry that broke it, found in the
// kustomization files the build reads (left out in the copy and restored
// after), at most MaxRepairs times. err is the build as committed;
// repaired the entries left out; built whether res is a build (as
// committed when err is nil, else without repaired).
func (l *loader) buildRepaired(root, dir string, obj map[string]any) (res []*resource.Resource, files []string, repaired []*Hole, built bool, err error) {
	res, files, err = l.buildIn(root, dir, obj)
	if err == nil || !l.env.Options.Holes {
		return res, files, nil, err == nil, err
	}
	var undo []func()
	defer func() {
		for _, u := range slices.Backward(undo) {
			u()
		}
	}()
	last := err
	committed := map[string][]byte{} // the files as committed, for the entries' lines
	for range MaxRepairs {
		h, restore, ok := l.leaveOutBroken(root, filepath.Join(root, filepath.FromSlash(dir)), last, committed)
		if !ok {
			return nil, nil, repaired, false, err
		}
		undo = append(undo, restore)
		repaired = append(repaired, h)
		var berr error
		if res, files, berr = l.buildIn(root, dir, obj); berr == nil {
			return res, files, repaired, true, err
		}
		last = berr
	}
	return nil, nil, repaired, false, err
}

// broken is one entry that breaks a build.
type broken struct {
	hole *Hole
	// file is the kustomization file holding the entry (absolute), or the
	// file itself for a generated kustomization.yaml.
	file    string
	e       entry
	mention bool // the build error names it
}

// leaveOutBroken finds the entry of dir's build (absolute under root)
// that breaks it — preferring the one the build error names — and leaves
// it out: removed from its kustomization file, or for a directory
// without one (whose kustomization.yaml the controller generates) the
// file set aside. restore undoes that. committed holds the kustomization
// files as committed (before an earlier entry was left out), by path.
func (l *loader) leaveOutBroken(root, dir string, buildErr error, committed map[string][]byte) (*Hole, func(), bool) {
	msg := buildErr.Error()
	var found []broken
	seen := map[string]bool{}
	var visit func(d string, top bool)
	visit = func(d string, top bool) {
		if seen[d] || len(seen) > 1000 {
			return
		}
		seen[d] = true
		kf := kustomizationFile(d)
		if kf == "" {
			if top {
				gb, subs := l.generatedBroken(root, d, msg)
				found = append(found, gb...)
				// The generated kustomization.yaml lists each directory
				// below that has a kustomization file: their entries
				// break this build too (a file listed but missing in a
				// nested apps/observability/kustomization.yaml).
				for _, sub := range subs {
					visit(sub, false)
				}
			}
			return
		}
		b, err := os.ReadFile(kf)
		if err != nil {
			return
		}
		n, err := kyaml.Parse(string(b))
		if err != nil || n.YNode().Kind != kyaml.MappingNode {
			return
		}
		if _, ok := committed[kf]; !ok {
			committed[kf] = b
			// The index holds it as committed, before any entry the tool
			// cannot read offline was left out.
			if krel, err := filepath.Rel(root, kf); err == nil && root == l.tmp {
				if lines := l.env.FileLines(filepath.ToSlash(krel)); lines != nil {
					committed[kf] = []byte(strings.Join(lines, "\n"))
				}
			}
		}
		for _, e := range entries(n) {
			if !fluxkustomize.IsLocalRelativePath(e.path) {
				continue
			}
			p := filepath.Join(d, filepath.FromSlash(e.path))
			rel, rerr := filepath.Rel(root, p)
			if rerr != nil || !filepath.IsLocal(rel) {
				continue // kustomize's own refusal; not an entry to leave out
			}
			why, sub := l.entryBroken(root, p, e)
			if sub != "" {
				visit(sub, false)
			}
			if why == "" {
				continue
			}
			krel, _ := filepath.Rel(root, kf)
			_, serr := os.Lstat(p)
			found = append(found, broken{file: kf, e: e, mention: strings.Contains(msg, e.value) || strings.Contains(msg, filepath.ToSlash(rel)),
				hole: &Hole{Location: Location{File: filepath.ToSlash(krel), Line: entryLine(committed[kf], e.value)}, Field: e.field, Entry: e.value, Why: why, Absent: errors.Is(serr, fs.ErrNotExist)}})
		}
	}
	visit(dir, true)
	if len(found) == 0 {
		return nil, nil, false
	}
	pick := found[0]
	if i := slices.IndexFunc(found, func(b broken) bool { return b.mention }); i >= 0 {
		pick = found[i]
	}
	orig, err := os.ReadFile(pick.file)
	if err != nil {
		return nil, nil, false
	}
	restore := func() { _ = rewriteFile(pick.file, orig) }
	if pick.hole.Field == "" {
		// A file a generated kustomization.yaml would list: set aside
		// under a name the generator does not list.
		aside := pick.file + ".left-out"
		if os.Rename(pick.file, aside) != nil {
			return nil, nil, false
		}
		return pick.hole, func() { _ = os.Rename(aside, pick.file) }, true
	}
	n, err := kyaml.Parse(string(orig))
	if err != nil || pick.e.drop(n) != nil {
		return nil, nil, false
	}
	s, err := n.String()
	if err != nil || rewriteFile(pick.file, []byte(s)) != nil {
		restore()
		return nil, nil, false
	}
	return pick.hole, restore, true
}

// entryBroken says what is wrong with entry e naming p (absolute, inside
// root), "" when nothing is; sub is a directory whose kustomization file
// the build reads in turn.
func (l *loader) entryBroken(root, p string, e entry) (why, sub string) {
	rel, _ := filepath.Rel(root, p)
	rel = filepath.ToSlash(rel)
	st, err := os.Stat(p)
	switch {
	case err != nil && root == l.tmp && slices.ContainsFunc(l.copyNotes, func(n string) bool { return strings.HasPrefix(n, rel+" ") || strings.HasPrefix(n, rel+":") }):
		for _, n := range l.copyNotes {
			if strings.HasPrefix(n, rel+" ") || strings.HasPrefix(n, rel+":") {
				return "not in the artifact: " + n, ""
			}
		}
	case err != nil:
		return fmt.Sprintf("%s is not in the repository", rel), ""
	case st.IsDir() && !e.dir:
		return fmt.Sprintf("%s is a directory, not a file", rel), ""
	case st.IsDir():
		kf := kustomizationFile(p)
		if kf == "" {
			return fmt.Sprintf("%s is a directory without a kustomization.yaml (kustomize builds only a directory that has one)", rel), ""
		}
		b, err := os.ReadFile(kf)
		if err != nil {
			return "", ""
		}
		var k kustypes.Kustomization
		if err := yaml.Unmarshal(b, &k); err != nil {
			return fmt.Sprintf("%s does not decode: %v", filepath.ToSlash(mustRel(root, kf)), err), ""
		}
		switch {
		case e.field != "components" && k.Kind == kustypes.ComponentKind:
			return fmt.Sprintf("%s is a kind: Component, which kustomize accepts only under components:", rel), ""
		case e.field == "components" && k.Kind != kustypes.ComponentKind:
			return fmt.Sprintf("%s is not a kind: Component, which kustomize requires under components:", rel), ""
		}
		return "", p
	}
	if err := l.refused(root, rel); err != nil {
		return err.Error(), ""
	}
	if e.field == "resources" || e.field == "bases" {
		if err := decodes(p); err != nil {
			return fmt.Sprintf("%s does not decode: %v", rel, err), ""
		}
	}
	return "", ""
}

// refused is the copy's refusal of file rel (an alias bomb), nil if none.
func (l *loader) refused(root, rel string) error {
	if root != l.tmp {
		return nil
	}
	return l.bombs[rel]
}

// decodes parses file p as kustomize reads a resource file (the resource
// factory, as the controller's generator does), nil when it decodes.
func decodes(p string) (err error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	_, err = provider.NewDefaultDepProvider().GetResourceFactory().SliceFromBytes(b)
	return err
}

// generatedBroken lists the files of dir (no kustomization file: the
// controller generates one listing its manifests, fluxkustomize
// scanManifests) that break the build: refused or not decoding; subs are
// the directories below that the generated file lists as resources
// because they have a kustomization file of their own.
func (l *loader) generatedBroken(root, dir, msg string) (out []broken, subs []string) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if p != dir && kustomizationFile(p) != "" {
				subs = append(subs, p)
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(p); ext != ".yaml" && ext != ".yml" {
			return nil
		}
		rel := filepath.ToSlash(mustRel(root, p))
		why, line := "", 1
		if err := l.refused(root, rel); err != nil {
			why = err.Error()
			// The refusal begins with the file and the line of the alias.
			if rest, ok := strings.CutPrefix(why, rel+":"); ok {
				if n, _, ok := strings.Cut(rest, ":"); ok {
					if v, err := strconv.Atoi(n); err == nil {
						line = v
					}
				}
			}
		} else if err := decodes(p); err != nil {
			why = fmt.Sprintf("%s does not decode: %v", rel, err)
		}
		if why != "" {
			out = append(out, broken{file: p, mention: strings.Contains(msg, rel) || strings.Contains(msg, filepath.Base(p)),
				hole: &Hole{Location: Location{File: rel, Line: line}, Entry: rel, Why: why}})
		}
		return nil
	})
	return out, subs
}

func mustRel(root, p string) string {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return p
	}
	return rel
}

// OnceFixedFiles are the kustomization files (or files) of holes, sorted,
// once each: what must be fixed for a repaired build to be the committed one.
func OnceFixedFiles(holes []*Hole) []string {
	var out []string
	for _, h := range holes {
		if !slices.Contains(out, h.Location.File) {
			out = append(out, h.Location.File)
		}
	}
	slices.Sort(out)
	return out
}

// bytesText is n bytes for a message, in MiB too when whole.
func bytesText(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d bytes (%d MiB)", n, n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
