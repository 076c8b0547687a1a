// Package safeio is the one bounded read of user-named files and
// directories (regular, inside the directory, within a size limit) and the
// YAML alias-bomb rule.
package safeio

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// MaxFileSize bounds every file read from input. Flux's largest release
// manifest (source-controller.yaml with its CRDs) is about 1 MiB.
const MaxFileSize int64 = 32 << 20

// refuse explains why fi cannot be read as an input file ("" when it can).
func refuse(fi fs.FileInfo) string { return refuseMax(fi, MaxFileSize) }

func refuseMax(fi fs.FileInfo, max int64) string {
	switch {
	case fi.IsDir():
		return "is a directory"
	case !fi.Mode().IsRegular():
		return fmt.Sprintf("is not a regular file (%s)", kind(fi.Mode()))
	case fi.Size() > max:
		return fmt.Sprintf("is %d bytes, more than the %d-byte limit for this input", fi.Size(), max)
	}
	return ""
}

func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "mode " + m.Type().String()
}

// ReadLimited reads at most max bytes of r, and fails when there is more:
// the one bounded read every input goes through (stdin included).
func ReadLimited(r io.Reader, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("more than the %d-byte limit for an input file", max)
	}
	return data, nil
}

// CheckFile says whether the file the user named at p (symlinks followed:
// the user named it) may be read: an input error naming label and the fix
// when it is not a regular file or is too large. A missing file is
// reported with fs.ErrNotExist wrapped, for callers that allow it.
func CheckFile(p, label string) error { return CheckFileMax(p, label, MaxFileSize) }

// CheckFileMax is CheckFile with a smaller limit (an age key: 1 MiB).
func CheckFileMax(p, label string, max int64) error {
	fi, err := os.Stat(p)
	if err != nil {
		return verify.InputErrorf("%s: %w", label, cause(err))
	}
	if why := refuseMax(fi, max); why != "" {
		return verify.InputErrorf("%s %s: pass a regular file of at most %s", label, why, size(max))
	}
	return nil
}

func size(n int64) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

// Open opens the file the user named at p for a streaming read (a
// tarball), after CheckFile; reads past MaxFileSize fail.
func Open(p, label string) (io.ReadCloser, error) {
	if err := CheckFile(p, label); err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, verify.InputErrorf("%s: %w", label, cause(err))
	}
	fi, err := f.Stat()
	if err == nil && refuse(fi) != "" {
		err = fmt.Errorf("%s", refuse(fi))
	}
	if err != nil {
		f.Close()
		return nil, verify.InputErrorf("%s: %w", label, err)
	}
	return struct {
		io.Reader
		io.Closer
	}{&limited{r: f}, f}, nil
}

type limited struct {
	r io.Reader
	n int64
}

func (l *limited) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	l.n += int64(n)
	if l.n > MaxFileSize {
		return n, fmt.Errorf("more than the %d-byte limit for an input file", MaxFileSize)
	}
	return n, err
}

// ReadFile reads the file the user named at p, bounded.
func ReadFile(p, label string) ([]byte, error) { return ReadFileMax(p, label, MaxFileSize) }

// ReadFileMax is ReadFile with a smaller limit (a config file: 1 MiB); a
// file that grows past it while read fails too.
func ReadFileMax(p, label string, max int64) ([]byte, error) {
	if err := CheckFileMax(p, label, max); err != nil {
		return nil, err
	}
	r, err := Open(p, label)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data, err := ReadLimited(r, max)
	if err != nil {
		return nil, verify.InputErrorf("%s: %w", label, err)
	}
	return data, nil
}

// Dir is a directory the user named, read as an fs.FS that never leaves it
// (os.Root: a symlink may point only inside), reads only regular files and
// at most MaxFileSize bytes of each.
type Dir struct {
	root  *os.Root
	fsys  fs.FS
	path  string
	label string
}

// OpenDir opens the directory at p; label names it in messages, e.g.
// "--overlays ./my-overlays".
func OpenDir(p, label string) (*Dir, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, verify.InputErrorf("%s: %w", label, cause(err))
	}
	if !fi.IsDir() {
		return nil, verify.InputErrorf("%s is not a directory", label)
	}
	r, err := os.OpenRoot(p)
	if err != nil {
		return nil, verify.InputErrorf("%s: %w", label, cause(err))
	}
	return &Dir{root: r, fsys: r.FS(), path: p, label: label}, nil
}

// Close releases the directory.
func (d *Dir) Close() error { return d.root.Close() }

// Path is the directory as the user named it.
func (d *Dir) Path() string { return d.path }

// vet stats name inside the directory and refuses what may not be read.
func (d *Dir) vet(name string, dirOK bool) (fs.FileInfo, error) {
	return d.vetMax(name, dirOK, MaxFileSize)
}

func (d *Dir) vetMax(name string, dirOK bool, max int64) (fs.FileInfo, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	fi, err := d.root.Stat(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
		target := ""
		if t, lerr := os.Readlink(filepath.Join(d.path, filepath.FromSlash(name))); lerr == nil {
			target = " (a symlink to " + t + ")"
		}
		return nil, verify.InputErrorf("%s: %s%s points outside the directory or cannot be read (%v): copy the file into %s instead of linking it",
			d.label, name, target, cause(err), d.path)
	}
	if fi.IsDir() && dirOK {
		return fi, nil
	}
	if why := refuseMax(fi, max); why != "" {
		return nil, verify.InputErrorf("%s: %s %s: an input file must be a regular file of at most %s inside %s",
			d.label, name, why, size(max), d.path)
	}
	return fi, nil
}

// Check says whether name may be read, as ReadFile would, without reading
// it: for files another library reads after this check.
func (d *Dir) Check(name string) error {
	_, err := d.vet(name, false)
	return err
}

// Open implements fs.FS.
func (d *Dir) Open(name string) (fs.File, error) {
	if _, err := d.vet(name, true); err != nil {
		return nil, err
	}
	return d.fsys.Open(name)
}

// Stat implements fs.StatFS.
func (d *Dir) Stat(name string) (fs.FileInfo, error) { return d.vet(name, true) }

// ReadDir implements fs.ReadDirFS.
func (d *Dir) ReadDir(name string) ([]fs.DirEntry, error) {
	if _, err := d.vet(name, true); err != nil {
		return nil, err
	}
	return fs.ReadDir(d.fsys, name)
}

// ReadFile implements fs.ReadFileFS: a regular file inside the directory,
// at most MaxFileSize bytes.
func (d *Dir) ReadFile(name string) ([]byte, error) { return d.ReadFileMax(name, MaxFileSize) }

// ReadFileMax is ReadFile with a smaller limit (a policy file: MaxConfig),
// refused before it is read when larger.
func (d *Dir) ReadFileMax(name string, max int64) ([]byte, error) {
	if _, err := d.vetMax(name, false, max); err != nil {
		return nil, err
	}
	f, err := d.root.Open(name)
	if err != nil {
		return nil, verify.InputErrorf("%s: %s: %w", d.label, name, cause(err))
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || refuseMax(fi, max) != "" {
		return nil, verify.InputErrorf("%s: %s changed while it was read: run again", d.label, name)
	}
	data, err := ReadLimited(f, max)
	if err != nil {
		return nil, verify.InputErrorf("%s: %s: %w", d.label, name, err)
	}
	return data, nil
}

// Rel is name (a slash path relative to the directory) joined for messages.
func (d *Dir) Rel(name string) string { return path.Join(filepath.ToSlash(d.path), name) }

// cause strips an *fs.PathError to its cause: messages name the path
// themselves.
func cause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
