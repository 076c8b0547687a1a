package fluxrepo

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// copyRepo copies the repository into dst with bounded reads: regular files
// up to max bytes, symlinks only when they resolve to a file inside the
// repository (copied as files), .git left out. What is left out is noted.
func copyRepo(src, dst string, max int64) (notes []string, err error) {
	realSrc, err := filepath.EvalSymlinks(src)
	if err != nil {
		return nil, err
	}
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, werr error) error {
		if werr != nil {
			return werr
		}
		rel, _ := filepath.Rel(src, p)
		if rel == "." {
			return nil
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		from := p
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := filepath.EvalSymlinks(p)
			if err != nil {
				notes = append(notes, fmt.Sprintf("%s: dangling symlink, left out", filepath.ToSlash(rel)))
				return nil
			}
			if r, err := filepath.Rel(realSrc, target); err != nil || !filepath.IsLocal(r) {
				notes = append(notes, fmt.Sprintf("%s: symlink leaving the repository, left out", filepath.ToSlash(rel)))
				return nil
			}
			st, err := os.Stat(target)
			if err != nil || !st.Mode().IsRegular() {
				notes = append(notes, fmt.Sprintf("%s: symlink to a directory or special file, left out", filepath.ToSlash(rel)))
				return nil
			}
			from = target
		} else if !d.Type().IsRegular() {
			notes = append(notes, fmt.Sprintf("%s: not a regular file, left out", filepath.ToSlash(rel)))
			return nil
		}
		n, err := copyFile(from, filepath.Join(dst, rel), max)
		if err != nil {
			return err
		}
		if n > max {
			notes = append(notes, fmt.Sprintf("%s: larger than %d bytes, left out", filepath.ToSlash(rel), max))
		}
		return nil
	})
	return notes, err
}

// copyFile copies at most max bytes; it returns max+1 (and writes nothing)
// when the file is larger.
func copyFile(src, dst string, max int64) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return 0, err
	}
	if !st.Mode().IsRegular() {
		return 0, fmt.Errorf("%s: not a regular file", src)
	}
	if st.Size() > max {
		return max + 1, nil
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, io.LimitReader(in, max+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > max {
		// Grew while being read.
		err = os.Remove(dst)
	}
	return n, err
}

// isLocal says whether rel (slash-separated, relative) stays inside its root.
func isLocal(rel string) bool {
	return rel != "" && filepath.IsLocal(filepath.FromSlash(rel)) && !strings.HasPrefix(rel, "/")
}
