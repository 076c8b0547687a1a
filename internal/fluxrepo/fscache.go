package fluxrepo

import (
	"path"
	"path/filepath"
	"slices"
	"sync"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// fsCache memoizes, across the builds of one load, what kustomize asks of
// the private copy through the secure filesystem (fluxcd/pkg/kustomize/
// filesys, confined to the copy, no symlinks): each file is read, and each
// path's containment checked, once instead of once per build. The answers
// are the secure filesystem's own, errors (a path outside the root)
// included, so a cached answer is the answer the disk would give as long as
// the copy does not change. Only the copy is cached (never a staged
// ExternalArtifact).
//
// The copy changes between builds in two ways: a GitRepository's
// spec.ignore applied to it (walk.go resets the cache), and a failed build's
// repair (buildRepaired leaves the breaking entry out on disk, builds again,
// and restores the file after its last build). So a failed build empties
// the cache and makes it suspect: the builds that follow read the disk and
// record nothing, until one succeeds — the first build after a repair's
// restore — and the next build starts caching again.
type fsCache struct {
	mu      sync.Mutex
	files   map[string]cachedRead
	exists  map[string]bool
	isDir   map[string]bool
	abs     map[string]cachedAbs
	suspect bool
	// hits and misses count ReadFile answers (tests).
	hits, misses int
}

type cachedAbs struct {
	dir  filesys.ConfirmedDir
	file string
	err  error
}

type cachedRead struct {
	b   []byte
	err error
}

func newFSCache() *fsCache {
	c := &fsCache{}
	c.clear()
	return c
}

func (c *fsCache) clear() {
	c.files, c.exists, c.isDir, c.abs = map[string]cachedRead{}, map[string]bool{}, map[string]bool{}, map[string]cachedAbs{}
}

// seed gives the cache the files the copy (at root) wrote, as the secure
// filesystem would read them: each is a regular file inside the root, and
// the copy holds no symlink (copyRepo), so its read is its bytes. The
// kustomization files are left to the disk: leaveOutOffline may have
// rewritten them since.
func (c *fsCache) seed(root string, files []copiedFile) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range files {
		if slices.Contains(konfig.RecognizedKustomizationFileNames(), path.Base(f.rel)) {
			continue
		}
		c.files[filepath.Join(root, filepath.FromSlash(f.rel))] = cachedRead{b: f.b}
	}
}

// reset forgets every answer (the copy changed).
func (c *fsCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clear()
}

// done records how a build that used the cache ended: a failure empties it
// and makes it suspect (a repair may change the copy next).
func (c *fsCache) done(ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !ok {
		c.clear()
		c.suspect = true
		return
	}
	c.suspect = false
}

// buildFS is the filesystem of one build: fsys (the secure filesystem of
// the root) through cache (nil: no caching), with the kustomization file
// the controller's generator produced for the build's directory served from
// memory at kfile — the file kustomize-controller writes there before it
// builds (fluxcd/pkg/kustomize Generator.WriteFile = GenerateManifest, then
// the write), without writing and restoring it on disk per build.
type buildFS struct {
	filesys.FileSystem
	cache *fsCache
	use   bool // the cache was not suspect when the build began
	kfile string
	kdata []byte
}

// newBuildFS is the filesystem of one build (see buildFS); call done with
// the build's outcome.
func newBuildFS(fsys filesys.FileSystem, cache *fsCache, kfile string, kdata []byte) *buildFS {
	f := &buildFS{FileSystem: fsys, cache: cache, kfile: filepath.Clean(kfile), kdata: kdata}
	if cache != nil {
		cache.mu.Lock()
		f.use = !cache.suspect
		cache.mu.Unlock()
	}
	return f
}

// done records the build's outcome in the cache.
func (f *buildFS) done(ok bool) {
	if f.cache != nil {
		f.cache.done(ok)
	}
}

func (f *buildFS) generated(p string) bool {
	return f.kfile != "." && filepath.Clean(p) == f.kfile
}

// ReadFile reads p, the generated kustomization file from memory.
func (f *buildFS) ReadFile(p string) ([]byte, error) {
	if f.generated(p) {
		return slices.Clone(f.kdata), nil
	}
	if !f.use {
		return f.FileSystem.ReadFile(p)
	}
	c := f.cache
	c.mu.Lock()
	r, ok := c.files[p]
	if ok {
		c.hits++
	} else {
		c.misses++
	}
	c.mu.Unlock()
	if !ok {
		b, err := f.FileSystem.ReadFile(p)
		r = cachedRead{b: b, err: err}
		c.mu.Lock()
		c.files[p] = r
		c.mu.Unlock()
	}
	// A copy: nothing a build does to the bytes reaches the next build.
	if r.err != nil {
		return nil, r.err
	}
	return slices.Clone(r.b), nil
}

// Exists says whether p exists (the generated kustomization file does).
func (f *buildFS) Exists(p string) bool {
	if f.generated(p) {
		return true
	}
	return f.memo(f.cache.existsMap, p, f.FileSystem.Exists)
}

// IsDir says whether p is a directory (the generated kustomization file is not).
func (f *buildFS) IsDir(p string) bool {
	if f.generated(p) {
		return false
	}
	return f.memo(f.cache.isDirMap, p, f.FileSystem.IsDir)
}

// CleanedAbs is the secure filesystem's, memoized (the generated
// kustomization file is never its argument: kustomize asks it of
// directories and of the files a kustomization names).
func (f *buildFS) CleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	if !f.use || f.generated(p) {
		return f.FileSystem.CleanedAbs(p)
	}
	c := f.cache
	c.mu.Lock()
	r, ok := c.abs[p]
	c.mu.Unlock()
	if !ok {
		r.dir, r.file, r.err = f.FileSystem.CleanedAbs(p)
		c.mu.Lock()
		c.abs[p] = r
		c.mu.Unlock()
	}
	return r.dir, r.file, r.err
}

func (c *fsCache) existsMap() map[string]bool { return c.exists }
func (c *fsCache) isDirMap() map[string]bool  { return c.isDir }

// memo answers p by ask, through the cache map m when the build uses it.
func (f *buildFS) memo(m func() map[string]bool, p string, ask func(string) bool) bool {
	if !f.use {
		return ask(p)
	}
	c := f.cache
	c.mu.Lock()
	v, ok := m()[p]
	c.mu.Unlock()
	if ok {
		return v
	}
	v = ask(p)
	c.mu.Lock()
	m()[p] = v
	c.mu.Unlock()
	return v
}
