package fluxrepo

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	fluxkustomize "github.com/fluxcd/pkg/kustomize"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Builds holds the kustomize builds of one load (Options.RecordBuilds) for
// a load of another revision of the same repository to take instead of
// building again (Options.ReuseBuilds), as `bootstrap diff` loads base,
// then head.
//
// A build is a function of what it asks its filesystem and of the
// kustomization file the controller's generator produced for it: the
// build (krusty, plugins disabled, no load restrictions, kustomize's
// built-in schema — loader.plainSchema) reads nothing else. So each build
// of the copy is recorded with every query kustomize put to its filesystem
// and the answer it got — a file's content (a hash) or its read error, a
// directory's listing, an existence or directory check, a path's
// containment (CleanedAbs), a glob — in the order asked, after the
// loader's own refusals (an alias bomb) and the generated kustomization
// file served from memory. A build at head is taken from base when the
// generator produced the same kustomization file at the same path (it
// carries the Kustomization's spec — patches, images, prefixes, the
// components — and, for a directory without one, the files the generator
// found there) and every recorded query, put to head's copy, gets the same
// answer: an added file in a listed directory, a kustomization.yaml
// renamed to Kustomization, a component's or generator input's change, a
// repair that left an entry out on disk — each changes an answer, so the
// build runs. A build that asked anything else (opened or walked a file,
// wrote, read outside the copy) is not recorded; neither is a failed one.
// Post-build substitution is not part of a build: it runs per revision.
type Builds struct {
	mu    sync.Mutex
	byKey map[buildKey][]*builtRecord
	// reused counts the builds taken from the record (tests, benchmarks),
	// reusedDirs them by directory (tests; under mu).
	reused, recorded atomic.Int64
	reusedDirs       map[string]int
	// gens are the generator's results for directories without a
	// kustomization file (generateManifest; under mu).
	gens map[string]generated

	// live: the recording load runs beside the loads reusing it (Live);
	// a reusing load then waits for a build the recording load runs
	// (building) or for the directory it has not reached yet, until it
	// has built there (tried, by directory: one built there under another
	// key — a changed kustomization file — is not waited for) or is over
	// (over). changed wakes the waiters: on every record, end of a build
	// and the end of the load. Under mu.
	live     bool
	over     bool
	building map[buildKey]int
	tried    map[string]bool
	changed  *sync.Cond
}

// NewBuilds returns an empty record of builds.
func NewBuilds() *Builds {
	b := &Builds{byKey: map[buildKey][]*builtRecord{}, reusedDirs: map[string]int{}, gens: map[string]generated{},
		building: map[buildKey]int{}, tried: map[string]bool{}}
	b.changed = sync.NewCond(&b.mu)
	return b
}

// Live says the load recording into b runs beside the loads reusing it
// (bootstrap diff loads base and head at once): a reusing load asking for
// a build the recording load runs, or has not tried yet, waits for it
// rather than building it too. finish must be called once the recording
// load is over (whatever its outcome): the waits end then.
func (b *Builds) Live() (finish func()) {
	b.mu.Lock()
	b.live = true
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		b.over = true
		b.changed.Broadcast()
		b.mu.Unlock()
	}
}

// started notes that the recording load builds k now; the returned func
// notes the build's end (recorded or not).
func (b *Builds) started(k buildKey) (ended func()) {
	b.mu.Lock()
	b.building[k]++
	b.tried[k.dir] = true
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		b.building[k]--
		b.changed.Broadcast()
		b.mu.Unlock()
	}
}

// Reused is how many builds loads took from b instead of building.
func (b *Builds) Reused() int64 { return b.reused.Load() }

// Recorded is how many builds b holds.
func (b *Builds) Recorded() int64 { return b.recorded.Load() }

// buildKey is what a build is, besides its filesystem's answers: the
// directory (relative to the copy), the generated kustomization file (its
// path relative to the copy, a hash of its bytes) and whether the
// generator created it.
type buildKey struct {
	dir, kfile, kdata string
	action            fluxkustomize.Action
}

type builtRecord struct {
	queries []fsQuery
	res     []*resource.Resource
	files   []string
}

// fsQuery is one question a build put to its filesystem: op, the path
// relative to the copy, and the answer (encoded, the copy's root written
// as $ROOT).
type fsQuery struct {
	op     byte
	path   string
	answer string
}

const (
	opRead byte = iota
	opExists
	opIsDir
	opAbs
	opReadDir
	opGlob
)

// queryFS records (log non-nil) or asks again (replay) the questions of
// one build of the copy at root.
type queryFS struct {
	filesys.FileSystem
	root   string
	mu     sync.Mutex
	seen   map[[2]string]bool
	log    []fsQuery
	opaque bool // asked what is not recorded: the build is not reusable
}

func newQueryFS(fsys filesys.FileSystem, root string) *queryFS {
	return &queryFS{FileSystem: fsys, root: root, seen: map[[2]string]bool{}}
}

// rel is p relative to the root ("" and false outside it).
func (q *queryFS) rel(p string) (string, bool) {
	if p == q.root {
		return ".", true
	}
	if r, ok := strings.CutPrefix(p, q.root+string(filepath.Separator)); ok {
		return filepath.ToSlash(r), true
	}
	return "", false
}

func (q *queryFS) abs(rel string) string {
	return filepath.Join(q.root, filepath.FromSlash(rel))
}

// note records op on p with its answer (once per op and path: the copy
// does not change during a build).
func (q *queryFS) note(op byte, p, answer string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	r, ok := q.rel(p)
	if !ok {
		q.opaque = true
		return
	}
	k := [2]string{string(op), r}
	if q.seen[k] {
		return
	}
	q.seen[k] = true
	q.log = append(q.log, fsQuery{op: op, path: r, answer: answer})
}

func (q *queryFS) markOpaque() {
	q.mu.Lock()
	q.opaque = true
	q.mu.Unlock()
}

// Each answer is encoded by one function, used when recording and when
// asking again.

func (q *queryFS) errText(err error) string {
	if err == nil {
		return ""
	}
	return "!" + strings.ReplaceAll(err.Error(), q.root, "$ROOT")
}

func (q *queryFS) encRead(b []byte, err error) string {
	if err != nil {
		return q.errText(err)
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func encBool(v bool) string {
	if v {
		return "1"
	}
	return "0"
}

func (q *queryFS) encAbs(d filesys.ConfirmedDir, f string, err error) string {
	if err != nil {
		return q.errText(err)
	}
	r, ok := q.rel(string(d))
	if !ok {
		r = "?" + string(d) // outside the copy: never equal at another root
	}
	return r + "\x00" + f
}

func (q *queryFS) encList(names []string, err error) string {
	if err != nil {
		return q.errText(err)
	}
	out := make([]string, len(names))
	for i, n := range names {
		if r, ok := q.rel(n); ok && filepath.IsAbs(n) {
			n = "$ROOT/" + r
		}
		out[i] = n
	}
	return strings.Join(out, "\x00")
}

// ReadFile reads p and records its content's hash (or the error).
func (q *queryFS) ReadFile(p string) ([]byte, error) {
	b, err := q.FileSystem.ReadFile(p)
	q.note(opRead, p, q.encRead(b, err))
	return b, err
}

// Exists records whether p exists.
func (q *queryFS) Exists(p string) bool {
	v := q.FileSystem.Exists(p)
	q.note(opExists, p, encBool(v))
	return v
}

// IsDir records whether p is a directory.
func (q *queryFS) IsDir(p string) bool {
	v := q.FileSystem.IsDir(p)
	q.note(opIsDir, p, encBool(v))
	return v
}

// CleanedAbs records p's containment and resolution.
func (q *queryFS) CleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	d, f, err := q.FileSystem.CleanedAbs(p)
	q.note(opAbs, p, q.encAbs(d, f, err))
	return d, f, err
}

// ReadDir records p's listing.
func (q *queryFS) ReadDir(p string) ([]string, error) {
	names, err := q.FileSystem.ReadDir(p)
	q.note(opReadDir, p, q.encList(names, err))
	return names, err
}

// Glob records pattern's matches.
func (q *queryFS) Glob(pattern string) ([]string, error) {
	m, err := q.FileSystem.Glob(pattern)
	q.note(opGlob, pattern, q.encList(m, err))
	return m, err
}

// Open, Walk and the writes are not recorded: a build that uses them is
// not reused.

func (q *queryFS) Open(p string) (filesys.File, error) {
	q.markOpaque()
	return q.FileSystem.Open(p)
}

func (q *queryFS) Walk(p string, fn filepath.WalkFunc) error {
	q.markOpaque()
	return q.FileSystem.Walk(p, fn)
}

func (q *queryFS) Create(p string) (filesys.File, error) {
	q.markOpaque()
	return q.FileSystem.Create(p)
}

func (q *queryFS) Mkdir(p string) error {
	q.markOpaque()
	return q.FileSystem.Mkdir(p)
}

func (q *queryFS) MkdirAll(p string) error {
	q.markOpaque()
	return q.FileSystem.MkdirAll(p)
}

func (q *queryFS) RemoveAll(p string) error {
	q.markOpaque()
	return q.FileSystem.RemoveAll(p)
}

func (q *queryFS) WriteFile(p string, b []byte) error {
	q.markOpaque()
	return q.FileSystem.WriteFile(p, b)
}

// ask puts a recorded query to q's filesystem and encodes its answer.
func (q *queryFS) ask(x fsQuery) string {
	p := q.abs(x.path)
	switch x.op {
	case opRead:
		return q.encRead(q.FileSystem.ReadFile(p))
	case opExists:
		return encBool(q.FileSystem.Exists(p))
	case opIsDir:
		return encBool(q.FileSystem.IsDir(p))
	case opAbs:
		return q.encAbs(q.FileSystem.CleanedAbs(p))
	case opReadDir:
		return q.encList(q.FileSystem.ReadDir(p))
	case opGlob:
		return q.encList(q.FileSystem.Glob(p))
	}
	return "\x00unknown"
}

func newBuildKey(root, dir string, bfs *buildFS, action fluxkustomize.Action) buildKey {
	kfile := bfs.kfile
	if r, err := filepath.Rel(root, kfile); err == nil {
		kfile = filepath.ToSlash(r)
	}
	h := sha256.Sum256(bfs.kdata)
	return buildKey{dir: filepath.ToSlash(dir), kfile: kfile, kdata: hex.EncodeToString(h[:]), action: action}
}

// record keeps a successful build (copies of its resources: the loader
// and its callers change the ones they get).
func (b *Builds) record(k buildKey, q *queryFS, res []*resource.Resource, files []string) {
	q.mu.Lock()
	opaque, log := q.opaque, slices.Clone(q.log)
	q.mu.Unlock()
	if opaque {
		return
	}
	r := &builtRecord{queries: log, res: cloneResources(res), files: slices.Clone(files)}
	b.mu.Lock()
	b.byKey[k] = append(b.byKey[k], r)
	b.changed.Broadcast()
	b.mu.Unlock()
	b.recorded.Add(1)
}

// take returns a recorded build of k whose every query fsys (the build's
// filesystem at root, as it would be built) answers as recorded.
// With a live record (Live), it waits while the recording load builds k
// or has yet to try it, and looks again at each build recorded.
func (b *Builds) take(k buildKey, fsys filesys.FileSystem, root string) ([]*resource.Resource, []string, bool) {
	q := newQueryFS(fsys, root)
	seen := 0
	for {
		b.mu.Lock()
		cands := slices.Clone(b.byKey[k][seen:])
		wait := b.waits(k)
		b.mu.Unlock()
		seen += len(cands)
	next:
		for _, r := range cands {
			for _, x := range r.queries {
				if q.ask(x) != x.answer {
					continue next
				}
			}
			b.reused.Add(1)
			b.mu.Lock()
			b.reusedDirs[k.dir]++
			b.mu.Unlock()
			return cloneResources(r.res), slices.Clone(r.files), true
		}
		if !wait {
			return nil, nil, false
		}
		b.mu.Lock()
		for len(b.byKey[k]) == seen && b.waits(k) {
			b.changed.Wait()
		}
		b.mu.Unlock()
	}
}

// waits says whether a take of k waits (under mu): the recording load is
// live and builds k now, or has not built in k's directory yet.
func (b *Builds) waits(k buildKey) bool {
	return b.live && !b.over && (b.building[k] > 0 || !b.tried[k.dir])
}

func cloneResources(res []*resource.Resource) []*resource.Resource {
	out := make([]*resource.Resource, len(res))
	for i, r := range res {
		out[i] = r.DeepCopy()
	}
	return out
}

// reusable says whether l's builds may be recorded or reused: only when
// a remote entry is a hole (Options.Holes, nothing fetched), since
// kustomize reads a remote resource over HTTP, not through the
// filesystem it is given.
func (l *loader) reusable() bool {
	o := l.env.Options
	return o.Holes && !o.FetchRemote
}

// generateManifest is kustomize-controller's generator on abs (fluxcd/pkg/
// kustomize v1.35.6 Generator.GenerateManifest). For a directory without a
// kustomization file the generator walks it and parses every YAML file
// below it to list them; its result depends only on the Kustomization
// (obj) and on that subtree (it reads nothing else: no ignore rules with
// NewGenerator), so a load recording builds keeps it by both, and a load
// reusing builds takes it when the Kustomization and every entry below abs
// — path, type, a file's content, a link's target — are the same.
func (l *loader) generateManifest(root, abs string, obj map[string]any) ([]byte, string, fluxkustomize.Action, error) {
	gen := func() ([]byte, string, fluxkustomize.Action, error) {
		return fluxkustomize.NewGenerator(root, unstructured.Unstructured{Object: obj}).GenerateManifest(abs)
	}
	o := l.env.Options
	if (o.RecordBuilds == nil && o.ReuseBuilds == nil) || root != l.tmp || !l.reusable() || hasKustomizationFile(abs) {
		return gen() // with a kustomization file the generator only reads it
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil {
		return gen()
	}
	key, ok := generatorKey(filepath.ToSlash(rel), abs, obj)
	if !ok {
		return gen()
	}
	if b := o.ReuseBuilds; b != nil {
		b.mu.Lock()
		g, ok := b.gens[key]
		if ok {
			b.reusedDirs["generator:"+filepath.ToSlash(rel)]++
		}
		b.mu.Unlock()
		if ok {
			return slices.Clone(g.kdata), filepath.Join(root, filepath.FromSlash(g.kfile)), g.action, nil
		}
	}
	m, kfile, action, err := gen()
	if b := o.RecordBuilds; b != nil && err == nil {
		if kr, rerr := filepath.Rel(root, kfile); rerr == nil && filepath.IsLocal(kr) {
			b.mu.Lock()
			b.gens[key] = generated{kdata: slices.Clone(m), kfile: filepath.ToSlash(kr), action: action}
			b.mu.Unlock()
		}
	}
	return m, kfile, action, err
}

// generated is a generator's result kept (kfile relative to the copy).
type generated struct {
	kdata  []byte
	kfile  string
	action fluxkustomize.Action
}

// hasKustomizationFile says whether dir holds a kustomization file the
// generator would take (a recognized name that is not a directory).
func hasKustomizationFile(dir string) bool {
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		if st, err := os.Lstat(filepath.Join(dir, n)); err == nil && !st.IsDir() {
			return true
		}
	}
	return false
}

// generatorKey is the generator's input for a directory without a
// kustomization file: rel, the Kustomization, and every entry below abs.
// Not with spec.ignoreMissingComponents: the generator then asks whether
// each component (outside abs) exists.
func generatorKey(rel, abs string, obj map[string]any) (string, bool) {
	if spec, _ := obj["spec"].(map[string]any); spec != nil && spec["ignoreMissingComponents"] == true {
		return "", false
	}
	h := sha256.New()
	spec, err := json.Marshal(obj) // map keys sorted: the same object, the same bytes
	if err != nil {
		return "", false
	}
	h.Write(spec)
	err = filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(abs, p)
		fmt.Fprintf(h, "\x00%s\x00%v\x00", filepath.ToSlash(r), d.Type())
		switch {
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			s := sha256.Sum256(b)
			h.Write(s[:])
		case d.Type()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			h.Write([]byte(t))
		}
		return nil
	})
	if err != nil {
		return "", false
	}
	return rel + "\x00" + hex.EncodeToString(h.Sum(nil)), true
}
