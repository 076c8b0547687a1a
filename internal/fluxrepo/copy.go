package fluxrepo

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/fluxcd/pkg/sourceignore"
	"github.com/fluxcd/pkg/sourceignore/gitignore"
	"golang.org/x/sync/errgroup"

	"github.com/homelab-ops/bootstrap/internal/safeio"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// ignoreFilter is source-controller's artifact filter for dir: the
// .sourceignore files of the repository and the GitRepository's
// spec.ignore; the default exclusions (CI files, images, archives …) apply
// only when there are none (fluxcd/pkg/artifact SourceIgnoreFilter). VCS
// files are always excluded.
func ignoreFilter(dir string, specIgnore *string) (func(p string, isDir bool) bool, error) {
	domain := strings.Split(dir, string(filepath.Separator))
	ps, err := sourceignore.LoadIgnorePatterns(dir, domain)
	if err != nil {
		return nil, err
	}
	if specIgnore != nil {
		ps = append(ps, sourceignore.ReadPatterns(strings.NewReader(*specIgnore), domain)...)
	}
	matcher := sourceignore.NewDefaultMatcher(ps, domain)
	if len(ps) > 0 {
		matcher = gitignore.NewMatcher(append(sourceignore.VCSPatterns(domain), ps...))
	}
	return func(p string, isDir bool) bool {
		return matcher.Match(strings.Split(p, string(filepath.Separator)), isDir)
	}, nil
}

// copyRepo copies the repository into dst as source-controller archives
// it: regular files only, minus what the ignore rules exclude, each file at
// most max bytes. A symlink is never followed — source-controller leaves
// symlinks out of an artifact, wherever they point — so nothing outside the
// repository (or a device behind a link) is ever read. What is left out for
// a reason a person may not expect is noted, with the fix. A YAML alias
// bomb is kept out (an empty file in its place) and returned in bombs, the
// refusal for the build that reads it: a file no build reads refuses
// nothing. big are the files left out for their size.
func copyRepo(src, dst string, max int64) (notes []string, bombs map[string]error, big map[string]bool, err error) {
	return copyRepoFiles(src, dst, max, false, nil)
}

// copyRepoFiles is copyRepo, calling copied (when not nil) with each file
// written to the copy, the bytes written and whether it was linked
// instead, in the order of the walk.
//
// dst "" prepares src in place instead (Options.InPlace): the same walk,
// rules, notes, bombs and callbacks, but what the copy would leave out is
// removed from src (a symlink, a file the ignore rules exclude, a file
// over max, a directory the ignore rules exclude once nothing is left in
// it) and an alias bomb is emptied; a file kept is read, never written.
// src then holds exactly what the copy would have held.
//
// link: a file kept is linked into the copy (a hard link: one directory
// entry, no new inode nor data written), where the filesystem allows it,
// instead of written. Only for a copy nothing writes into in place: every
// write of the loader into its copy replaces the file (rewriteFile), so
// the repository's own file behind a link is never changed. A file that
// cannot be linked (another filesystem, a link refused) is written.
func copyRepoFiles(src, dst string, max int64, link bool, copied func(rel string, b []byte, linked bool)) (notes []string, bombs map[string]error, big map[string]bool, err error) {
	inPlace := dst == ""
	src, err = filepath.Abs(src)
	if err != nil {
		return nil, nil, nil, err
	}
	// --repo itself may be a link to the checkout: the walk starts inside it.
	if real, err := filepath.EvalSymlinks(src); err == nil {
		src = real
	}
	ignored, err := ignoreFilter(src, nil)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("source ignore patterns: %w", err)
	}
	steps, drop, ignoredDirs, err := planCopy(src, dst, ignored)
	if err != nil {
		return notes, bombs, big, err
	}
	var g errgroup.Group
	g.SetLimit(copyWorkers())
	for _, st := range steps {
		if st.src != "" {
			g.Go(func() error { return st.copy(max, link) })
		}
	}
	if err := g.Wait(); err != nil {
		return notes, bombs, big, err
	}
	if inPlace {
		if err := dropAll(drop, ignoredDirs); err != nil {
			return notes, bombs, big, err
		}
	}
	notes, bombs, big = collectCopy(steps, max, copied)
	return notes, bombs, big, nil
}

// planCopy walks src for copyRepoFiles: it makes the copy's directories
// (dst "": none, in place) and lists, in the walk's order, the files to
// copy and the notes; drop is what an in-place preparation removes, and
// ignoredDirs the directories the ignore rules exclude (removed when empty).
func planCopy(src, dst string, ignored func(string, bool) bool) (steps []*copyStep, drop, ignoredDirs []string, err error) {
	inPlace := dst == ""
	// made are the directories of the copy made so far: a file's directory
	// is made once (the walk makes each directory before its files, unless
	// the ignore rules matched the directory itself).
	made := map[string]bool{".": true}
	// The walk makes the directories and lists the files; the files are
	// copied concurrently (the copy is mostly system calls), and what each
	// copy found is taken in the walk's order: the notes, bombs and
	// callbacks are those of a copy one file after another.
	// In place: what the copy leaves out, removed after the walk (drop),
	// and the directories the ignore rules exclude, removed when empty
	// (the copy makes them only for a file they keep).
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, werr error) error {
		if werr != nil {
			return werr
		}
		rel, _ := filepath.Rel(src, p)
		if rel == "." {
			return nil
		}
		if d.IsDir() && d.Name() == ".git" {
			if inPlace {
				// Never a tree the caller wrote for this load (gitrev
				// writes no .git): refused rather than changed in place.
				return fmt.Errorf("%s holds %s: a Git checkout is never prepared in place (Options.InPlace is for a private tree); load it without InPlace", src, filepath.ToSlash(rel))
			}
			return filepath.SkipDir
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0 && ignored(p, false):
			drop = append(drop, p)
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			steps = append(steps, &copyStep{note: fmt.Sprintf("%s (a symlink to %s): source-controller leaves symlinks out of the artifact, so it was left out; commit the file itself", filepath.ToSlash(rel), target)})
			drop = append(drop, p)
			return nil
		case d.IsDir():
			if ignored(p, true) {
				ignoredDirs = append(ignoredDirs, p)
				return nil // its files are matched one by one, as the archiver does
			}
			made[rel] = true
			if inPlace {
				return nil
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		case !d.Type().IsRegular():
			drop = append(drop, p)
			return nil
		case ignored(p, false):
			drop = append(drop, p)
			return nil
		}
		if inPlace {
			steps = append(steps, &copyStep{src: p, rel: filepath.ToSlash(rel)})
			return nil
		}
		if dir := filepath.Dir(rel); !made[dir] {
			if err := os.MkdirAll(filepath.Join(dst, dir), 0o700); err != nil {
				return err
			}
			made[dir] = true
		}
		steps = append(steps, &copyStep{src: p, dst: filepath.Join(dst, rel), rel: filepath.ToSlash(rel)})
		return nil
	})
	return steps, drop, ignoredDirs, err
}

// collectCopy takes what each copied file found, in the walk's order: the
// notes, the alias bombs, the files over max, and the callback per file.
func collectCopy(steps []*copyStep, max int64, copied func(rel string, b []byte, linked bool)) (notes []string, bombs map[string]error, big map[string]bool) {
	for _, st := range steps {
		switch {
		case st.src == "":
			notes = append(notes, st.note)
			continue
		case st.b == nil:
			notes = append(notes, fmt.Sprintf("%s: larger than %s (this tool's read bound; no flag or policy raises it), left out: its objects are not checked", st.rel, bytesText(max)))
			if big == nil {
				big = map[string]bool{}
			}
			big[st.rel] = true
			continue
		case st.bomb != "":
			if bombs == nil {
				bombs = map[string]error{}
			}
			bombs[st.rel] = verify.InputErrorf("%s: %s; kustomize, here and in kustomize-controller, would expand every alias in memory: write the values out, or alias less", Location{File: st.rel, Line: st.bombLine}, st.bomb)
		}
		if copied != nil {
			copied(st.rel, st.b, st.linked)
		}
	}
	return notes, bombs, big
}

// copyStep is one entry of the copy, in the walk's order: a file (src) or
// a note.
type copyStep struct {
	// dst "": in place (src is the file kept, removed or emptied).
	src, dst, rel string
	note          string
	// What the copy of src found: the bytes written (nil: over the
	// bound), and the YAML alias bomb kept out, if any.
	b        []byte
	bomb     string
	bombLine int
	// linked: the copy is a hard link to src (not written).
	linked bool
}

// copy copies the step's file, at most max bytes; an alias bomb is
// written as an empty file (see safeio.AliasBomb).
//
// In place (dst ""), a file over max is removed, a bomb emptied, and a
// file kept is left as it is.
//
// link: a file kept is linked into the copy where it can be (see
// copyRepoFiles); an alias bomb's empty file is always written.
func (st *copyStep) copy(max int64, link bool) error {
	b, err := readCapped(st.src, max)
	if err != nil {
		return err
	}
	if b == nil {
		if st.dst == "" {
			return os.Remove(st.src)
		}
		return nil
	}
	// Kept from anything that would expand it (see safeio.AliasBomb).
	if line, why := safeio.AliasBomb(b); why != "" {
		st.bomb, st.bombLine = why, line
		b = []byte{}
		if st.dst == "" {
			// The walk found a regular file of a private tree: replaced
			// by an empty one, as the copy writes (never truncated
			// through: the tree's file may be a link, gitrev.Materialize).
			st.b = b
			return rewriteFile(st.src, b)
		}
	}
	st.b = b
	if st.dst == "" {
		return nil
	}
	if link && st.bomb == "" && os.Link(st.src, st.dst) == nil {
		st.linked = true
		return nil
	}
	return writeNew(st.dst, b)
}

// dropAll removes files (what an in-place preparation leaves out) and then
// the directories of dirs left empty, deepest first.
func dropAll(files, dirs []string) error {
	for _, p := range files {
		if err := os.Remove(p); err != nil {
			return err
		}
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		entries, err := os.ReadDir(dirs[i])
		if err != nil {
			return err
		}
		if len(entries) == 0 {
			if err := os.Remove(dirs[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// copyWorkers is how many files are copied at once: system calls wait on
// the kernel more than on a processor.
func copyWorkers() int { return 2 * runtime.GOMAXPROCS(0) }

// applySpecIgnore removes from the copy dir what a GitRepository's
// spec.ignore excludes from its artifact.
func applySpecIgnore(dir string, specIgnore string) error {
	ignored, err := ignoreFilter(dir, &specIgnore)
	if err != nil {
		return err
	}
	var drop []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, werr error) error {
		if werr != nil {
			return werr
		}
		if !d.IsDir() && ignored(p, false) {
			drop = append(drop, p)
		}
		return nil
	})
	for _, p := range drop {
		if rerr := os.Remove(p); rerr != nil && err == nil {
			err = rerr
		}
	}
	return err
}

// readCapped reads src, a regular file, if it holds at most max bytes;
// nil (no error) when it is larger.
func readCapped(src string, max int64) ([]byte, error) {
	in, err := os.Open(src)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", src)
	}
	if st.Size() > max {
		return nil, nil
	}
	// Sized for the file (and the read that finds its end), as os.ReadFile
	// does: one allocation.
	buf := bytes.NewBuffer(make([]byte, 0, st.Size()+512))
	_, err = buf.ReadFrom(io.LimitReader(in, max+1))
	b := buf.Bytes()
	if err != nil || int64(len(b)) > max {
		return nil, err // an error, or grown while being read
	}
	if b == nil {
		b = []byte{}
	}
	return b, nil
}

// writeNew writes b to dst, a file that must not exist yet.
func writeNew(dst string, b []byte) error {
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = out.Write(b)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// rewriteFile replaces p, a file of the copy, with b: removed, then
// written anew, never written through. The copy's files may be hard links
// to the repository's own (copyRepoFiles), which a write in place would
// change.
func rewriteFile(p string, b []byte) error {
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return writeNew(p, b)
}

// isLocal says whether rel (slash-separated, relative) stays inside its root.
func isLocal(rel string) bool {
	return rel != "" && filepath.IsLocal(filepath.FromSlash(rel)) && !strings.HasPrefix(rel, "/")
}
