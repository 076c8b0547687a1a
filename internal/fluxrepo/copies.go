package fluxrepo

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// Copies keeps the private copies of repositories between the loads that
// share it (Options.Copies): `check` loads one repository once per cluster
// root and once per sibling environment it compares with, and each load
// would copy the whole repository again (a directory per directory, a
// link or a file per file, every file read and indexed). A load takes a
// copy of its repository from here when one is free, and gives it back
// restored: what the load changed in it (a kustomization with an entry left
// out, a file a GitRepository's spec.ignore removed, a file fetched) is put
// back as the copy was made, so the next load starts from the copy it would
// have made itself. The files' bytes are those read when the copy was made
// (one snapshot for every load sharing it). Close removes the copies.
//
// Only a linked copy is kept (copyRepoFiles' link: every write of the
// loader into its copy replaces a file, so a change is a new file, found
// by its identity); a load in place or with the upstream build copies as
// before.
type Copies struct {
	mu     sync.Mutex
	base   string
	n      int
	free   map[copyKey][]*pooledCopy
	closed bool
}

// NewCopies returns an empty set of copies; Close it when the loads are done.
func NewCopies() *Copies { return &Copies{free: map[copyKey][]*pooledCopy{}} }

// Close removes every copy kept.
func (c *Copies) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed, c.free = true, nil
	if c.base == "" {
		return nil
	}
	return os.RemoveAll(c.base)
}

type copyKey struct {
	repo string
	max  int64
}

// pooledCopy is one copy of a repository and what its making found.
type pooledCopy struct {
	key copyKey
	// src is the repository as copyRepoFiles resolves it, dir the copy.
	src, dir string
	// ready: the copy was made and recorded (else newLoader makes it).
	ready bool
	notes []string
	bombs map[string]error
	big   map[string]bool
	// copied are the files in the copy's walk order; files them by path
	// (OS-separated, relative), dirs the copy's directories.
	copied []copiedFile
	files  map[string]*pooledFile
	dirs   map[string]bool
	// index is the copy's file index as made (never changed once loaded:
	// every load of the copy shares it).
	index *fileIndex
}

type pooledFile struct {
	b      []byte
	linked bool
	// info is the copy's file as made (Lstat): a file replaced, removed
	// or written since is not this one.
	info fs.FileInfo
}

// take returns a free copy of repo (with max, Options.MaxFileBytes), or a
// new empty directory for one (not ready).
func (c *Copies) take(repo string, max int64) (*pooledCopy, error) {
	src := repo
	if real, err := filepath.EvalSymlinks(repo); err == nil {
		src = real
	}
	key := copyKey{src, max}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, fmt.Errorf("fluxrepo: Copies used after Close")
	}
	if free := c.free[key]; len(free) > 0 {
		pc := free[len(free)-1]
		c.free[key] = free[:len(free)-1]
		return pc, nil
	}
	if c.base == "" {
		base, err := os.MkdirTemp("", "fluxrepo-copies-")
		if err != nil {
			return nil, err
		}
		c.base = base
	}
	c.n++
	dir := filepath.Join(c.base, fmt.Sprint(c.n), "repo")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return &pooledCopy{key: key, src: src, dir: dir}, nil
}

// give takes back a copy a load is done with: restored, it is free for
// the next load; one that cannot be restored is removed.
func (c *Copies) give(pc *pooledCopy) {
	ok := pc.ready && pc.restore() == nil
	c.mu.Lock()
	defer c.mu.Unlock()
	if !ok || c.closed {
		_ = os.RemoveAll(filepath.Dir(pc.dir))
		return
	}
	c.free[pc.key] = append(c.free[pc.key], pc)
}

// made records the copy newLoader made in pc.dir, before anything changes
// it: its files, directories and what the copy found.
func (pc *pooledCopy) made(notes []string, bombs map[string]error, big map[string]bool, copied []copiedFile, linked map[string]bool) error {
	pc.notes, pc.bombs, pc.big, pc.copied = notes, bombs, big, copied
	pc.files, pc.dirs = map[string]*pooledFile{}, map[string]bool{}
	for _, f := range copied {
		pc.files[filepath.FromSlash(f.rel)] = &pooledFile{b: f.b, linked: linked[f.rel]}
	}
	err := filepath.WalkDir(pc.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(pc.dir, p)
		switch {
		case rel == ".":
		case d.IsDir():
			pc.dirs[rel] = true
		default:
			f := pc.files[rel]
			if f == nil {
				return fmt.Errorf("%s: in the copy, not copied", rel)
			}
			if f.info, err = d.Info(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for rel, f := range pc.files {
		if f.info == nil {
			return fmt.Errorf("%s: copied, not in the copy", rel)
		}
	}
	pc.ready = true
	return nil
}

// loaded is what the copy found, for a load of the copy kept: the notes
// are the load's own (the env appends to them).
func (pc *pooledCopy) loaded() (notes []string, bombs map[string]error, big map[string]bool, copied []copiedFile) {
	return slices.Clone(pc.notes), pc.bombs, pc.big, pc.copied
}

// restore puts the copy back as made: a file or directory the load added
// is removed, and a file it removed, replaced or changed is made again —
// linked again where the repository's file is still the one linked, else
// written with the bytes read when the copy was made.
func (pc *pooledCopy) restore() error {
	var drop []string
	same := map[string]bool{}
	seenDirs := map[string]bool{}
	err := filepath.WalkDir(pc.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(pc.dir, p)
		if rel == "." {
			return nil
		}
		if d.IsDir() {
			if !pc.dirs[rel] {
				drop = append(drop, p)
				return filepath.SkipDir
			}
			seenDirs[rel] = true
			return nil
		}
		f := pc.files[rel]
		if f == nil {
			drop = append(drop, p)
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if unchanged(f.info, fi) {
			same[rel] = true
		} else {
			drop = append(drop, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range drop {
		if err := os.RemoveAll(p); err != nil {
			return err
		}
	}
	for rel := range pc.dirs {
		if !seenDirs[rel] {
			if err := os.MkdirAll(filepath.Join(pc.dir, rel), 0o700); err != nil {
				return err
			}
		}
	}
	for rel, f := range pc.files {
		if same[rel] {
			continue
		}
		p := filepath.Join(pc.dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		linked := false
		if f.linked {
			src := filepath.Join(pc.src, rel)
			if fi, err := os.Lstat(src); err == nil && unchanged(f.info, fi) && os.Link(src, p) == nil {
				linked = true
			}
		}
		if !linked {
			if err := writeNew(p, f.b); err != nil {
				return err
			}
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		f.info, f.linked = fi, linked
	}
	return nil
}

// unchanged says whether b is the file a was: the same file, size,
// modification time and mode.
func unchanged(a, b fs.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime()) && a.Mode() == b.Mode()
}
