// Package gitrev reads one revision of the user's Git repository
// in-process, read-only (go-git over the object store: no checkout, no
// clone, nothing written into the repository), and materializes that
// commit's tree into a private temporary directory, so the repository
// model (internal/fluxrepo) can load it as it loads a work tree.
package gitrev

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// Limits bound a materialized tree.
type Limits struct {
	// MaxFileBytes: a larger blob is left out (noted). Default 64 MiB,
	// above the model's own per-file read bound, so the model judges the
	// file as it would in the work tree.
	MaxFileBytes int64
	// MaxTotalBytes bounds the sum of the blobs written (default 1 GiB);
	// MaxFiles their number (default 200,000). Past either: an error.
	MaxTotalBytes int64
	MaxFiles      int
}

func (l Limits) withDefaults() Limits {
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = 64 << 20
	}
	if l.MaxTotalBytes <= 0 {
		l.MaxTotalBytes = 1 << 30
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = 200000
	}
	return l
}

// Repo is the user's repository, opened read-only.
type Repo struct {
	r *git.Repository
	// Top is the work tree's root directory (absolute).
	Top string
	// Prefix is the directory the caller named, relative to Top
	// (slash-separated, "" for Top itself): what Materialize writes.
	Prefix string
	// written are the files Materialize wrote, by blob and mode: a later
	// tree's same blob (most of head's, in a diff) is linked to it, not
	// read from the object store and written again. Shared with the
	// handles Reopen makes.
	written *writtenFiles
}

// writtenFiles are the files written so far, by blob and mode; a file is
// recorded once complete.
type writtenFiles struct {
	mu sync.Mutex
	m  map[writtenKey]writtenFile
}

func (w *writtenFiles) get(k writtenKey) (writtenFile, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f, ok := w.m[k]
	return f, ok
}

func (w *writtenFiles) put(k writtenKey, f writtenFile) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.m[k] = f
}

type writtenFile struct {
	path string
	size int64
}

type writtenKey struct {
	hash plumbing.Hash
	mode os.FileMode
}

// Open opens the repository holding dir (dir or a parent has .git).
// The error is an input error naming dir and the fix.
func Open(dir string) (*Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, verify.InputErrorf("--repo %s: %w", dir, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	r, err := git.PlainOpenWithOptions(abs, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err != nil {
		return nil, verify.InputErrorf("--repo %s: not inside a Git repository (%v): diff compares two revisions of one; pass the repository's checkout", dir, err)
	}
	wt, err := r.Worktree()
	if err != nil {
		return nil, verify.InputErrorf("--repo %s: a bare repository has no work tree: pass a checkout (%v)", dir, err)
	}
	top, err := filepath.Abs(wt.Filesystem.Root())
	if err != nil {
		return nil, err
	}
	if real, err := filepath.EvalSymlinks(top); err == nil {
		top = real
	}
	rel, err := filepath.Rel(top, abs)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return nil, verify.InputErrorf("--repo %s: outside the work tree %s", dir, top)
	}
	prefix := filepath.ToSlash(rel)
	if prefix == "." {
		prefix = ""
	}
	return &Repo{r: r, Top: top, Prefix: prefix, written: &writtenFiles{m: map[writtenKey]writtenFile{}}}, nil
}

// Reopen opens g's repository again: a handle of its own, to materialize
// another commit at the same time (go-git's object store is not safe for
// concurrent use). The files either handle has written are linked by the
// other.
func (g *Repo) Reopen() (*Repo, error) {
	r, err := git.PlainOpenWithOptions(g.Top, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", g.Top, err)
	}
	return &Repo{r: r, Top: g.Top, Prefix: g.Prefix, written: g.written}, nil
}

// Commit is a resolved revision.
type Commit struct {
	// Rev is the revision as given (or as chosen by default).
	Rev string
	// Hash is the commit's full hash.
	Hash plumbing.Hash
	// Why says how a default was chosen ("" when given).
	Why string
}

// Short is the first 12 hex digits of the hash.
func (c Commit) Short() string { return c.Hash.String()[:12] }

func (c Commit) String() string {
	if c.Rev == c.Hash.String() {
		return c.Short()
	}
	return fmt.Sprintf("%s (%s)", c.Rev, c.Short())
}

// Resolve resolves a revision as git rev-parse does for the forms go-git
// reads (a branch, a tag, a full or abbreviated hash, HEAD~N, rev^N, a
// remote-tracking branch). The error is an input error naming rev and flag.
func (g *Repo) Resolve(flag, rev string) (Commit, error) {
	h, err := g.r.ResolveRevision(plumbing.Revision(rev))
	if err != nil || h == nil || h.IsZero() {
		why := "not found"
		if err != nil && !errors.Is(err, plumbing.ErrReferenceNotFound) {
			why = err.Error()
		}
		if sh := g.shallow(); sh != "" {
			return Commit{}, verify.InputErrorf("%s %q: not in %s, a shallow clone (%s) — %s", flag, rev, g.Top, sh, ShallowFix)
		}
		return Commit{}, verify.InputErrorf("%s %q: no such revision in %s (%s): pass a branch, tag or commit of this repository (git log --oneline lists them); fetch it first if it lives on a remote", flag, rev, g.Top, why)
	}
	return Commit{Rev: rev, Hash: *h}, nil
}

// ShallowFix says how to give a shallow clone the history a diff needs.
const ShallowFix = "fetch the history that holds the base: git fetch --unshallow (or git fetch --deepen=100 origin), then run again; in GitHub Actions, check out with actions/checkout's fetch-depth: 0 (its default, 1, fetches no base)"

// shallow describes where a shallow clone's history stops ("": not
// shallow).
func (g *Repo) shallow() string {
	hs, err := g.r.Storer.Shallow()
	if err != nil || len(hs) == 0 {
		return ""
	}
	short := make([]string, 0, len(hs))
	for _, h := range hs {
		short = append(short, h.String()[:12])
	}
	return "its history stops at " + strings.Join(short, ", ")
}

// Dirty says whether the work tree differs from HEAD (a change not
// committed, an untracked file not ignored).
func (g *Repo) Dirty() (bool, error) {
	wt, err := g.r.Worktree()
	if err != nil {
		return false, err
	}
	st, err := wt.Status()
	if err != nil {
		return false, err
	}
	return !st.IsClean(), nil
}

// DefaultBranch is the repository's default branch as a reference:
// origin/HEAD's target, else main, else master (local, then origin's);
// "" when none exists.
func (g *Repo) DefaultBranch() plumbing.ReferenceName {
	if ref, err := g.r.Reference("refs/remotes/origin/HEAD", true); err == nil {
		return ref.Name()
	}
	for _, n := range []plumbing.ReferenceName{"refs/heads/main", "refs/heads/master", "refs/remotes/origin/main", "refs/remotes/origin/master"} {
		if _, err := g.r.Reference(n, true); err == nil {
			return n
		}
	}
	return ""
}

// DefaultBase is the base a diff takes when none is given: HEAD when the
// work tree is dirty (what the uncommitted change does), else the
// merge-base of HEAD with the default branch (what the branch does), as
// a pull request compares them.
func (g *Repo) DefaultBase() (Commit, error) {
	head, err := g.Resolve("--base", "HEAD")
	if err != nil {
		return Commit{}, verify.InputErrorf("the repository %s has no commit yet: commit once, or pass --base", g.Top)
	}
	dirty, err := g.Dirty()
	if err != nil {
		return Commit{}, fmt.Errorf("reading the work tree's status: %w", err)
	}
	if dirty {
		head.Why = "the work tree has uncommitted changes: compared with HEAD"
		return head, nil
	}
	def := g.DefaultBranch()
	if sh := g.shallow(); def == "" && sh != "" {
		// A CI checkout of a pull request: one commit, no branch to
		// compare with; HEAD against itself would say "unchanged".
		return Commit{}, verify.InputErrorf("%s is a shallow clone (%s) with no default branch (origin/HEAD, main, master) to take the base from — pass --base (e.g. origin/main) after fetching it: git fetch origin main; %s", g.Top, sh, ShallowFix)
	}
	if def == "" {
		head.Why = "no default branch (origin/HEAD, main, master) found: compared with HEAD"
		return head, nil
	}
	ref, err := g.r.Reference(def, true)
	if err != nil {
		return Commit{}, err
	}
	hc, err := g.r.CommitObject(head.Hash)
	if err != nil {
		return Commit{}, err
	}
	dc, err := g.r.CommitObject(ref.Hash())
	if err != nil {
		return Commit{}, fmt.Errorf("%s: %w", def.Short(), err)
	}
	bases, err := hc.MergeBase(dc)
	if sh := g.shallow(); sh != "" && (err != nil || len(bases) == 0) {
		// The pull-request case: the default branch's history is cut.
		return Commit{}, verify.InputErrorf("the merge-base of HEAD and %s is not in %s, a shallow clone (%s) — %s; or pass --base", def.Short(), g.Top, sh, ShallowFix)
	}
	if err != nil {
		return Commit{}, fmt.Errorf("merge-base of HEAD and %s: %w", def.Short(), err)
	}
	if len(bases) == 0 {
		head.Why = fmt.Sprintf("HEAD and %s share no history: compared with HEAD", def.Short())
		return head, nil
	}
	c := Commit{Rev: "merge-base(HEAD, " + def.Short() + ")", Hash: bases[0].Hash}
	c.Why = fmt.Sprintf("the merge-base of HEAD with the default branch %s", def.Short())
	return c, nil
}

// Materialize writes the tree of commit c under g.Prefix into dst (an
// empty directory the caller owns and removes): regular files only, mode
// 0644 (0755 for executables), within Limits. Symbolic links and
// submodules are left out (the model's copy leaves symlinks out too, as
// source-controller's artifact does not follow them), as is a blob over
// MaxFileBytes; notes say so.
func (g *Repo) Materialize(c Commit, dst string, lim Limits) (notes []string, err error) {
	lim = lim.withDefaults()
	commit, err := g.r.CommitObject(c.Hash)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c, err)
	}
	tree, err := commit.Tree()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c, err)
	}
	if g.Prefix != "" {
		tree, err = tree.Tree(g.Prefix)
		if err != nil {
			return nil, verify.InputErrorf("--repo: %s does not exist at %s: compare revisions that both have it", g.Prefix, c)
		}
	}
	var files int
	var total int64
	mk := dirMaker{}
	wt := g.worktree()
	defer wt.close()
	w := object.NewTreeWalker(tree, true, nil)
	defer w.Close()
	for {
		name, e, err := w.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return notes, fmt.Errorf("%s: reading the tree: %w", c, err)
		}
		if !local(name) {
			return notes, fmt.Errorf("%s: tree entry %q is not a local path: refused", c, name)
		}
		target := filepath.Join(dst, filepath.FromSlash(name))
		switch e.Mode {
		case filemode.Dir:
			if err := mk.mkdir(target); err != nil {
				return notes, err
			}
			continue
		case filemode.Symlink:
			notes = append(notes, fmt.Sprintf("%s: a symbolic link, left out", name))
			continue
		case filemode.Submodule:
			notes = append(notes, fmt.Sprintf("%s: a submodule, left out", name))
			continue
		case filemode.Regular, filemode.Deprecated, filemode.Executable:
		default:
			continue
		}
		mode := os.FileMode(0o644)
		if e.Mode == filemode.Executable {
			mode = 0o755
		}
		wk := writtenKey{e.Hash, mode}
		if err := mk.mkdir(filepath.Dir(target)); err != nil {
			return notes, err
		}
		if prev, ok := g.written.get(wk); ok && os.Link(prev.path, target) == nil {
			// The trees are private and their loads replace a file
			// rather than write through it (fluxrepo rewriteFile): a
			// link shares nothing a load changes.
			files++
			total += prev.size
			if files > lim.MaxFiles || total > lim.MaxTotalBytes {
				return notes, verify.InputErrorf("%s: the tree holds more than %d files or %d bytes: too large to compare", c, lim.MaxFiles, lim.MaxTotalBytes)
			}
			continue
		}
		blob, err := g.r.BlobObject(e.Hash)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			// A partial clone (--filter=blob:none) holds only the blobs
			// fetched so far: the file is left out, as one over the bound;
			// a Flux tree missing it fails its build, which names it.
			notes = append(notes, fmt.Sprintf("%s: its content is not in the local object store (a partial clone?), left out; git checkout %s -- %s fetches it", name, c.Short(), name))
			continue
		}
		if err != nil {
			return notes, fmt.Errorf("%s: %s: %w", c, name, err)
		}
		if blob.Size > lim.MaxFileBytes {
			notes = append(notes, fmt.Sprintf("%s: %d bytes, over the %d-byte bound: left out", name, blob.Size, lim.MaxFileBytes))
			continue
		}
		files++
		total += blob.Size
		if files > lim.MaxFiles || total > lim.MaxTotalBytes {
			return notes, verify.InputErrorf("%s: the tree holds more than %d files or %d bytes: too large to compare", c, lim.MaxFiles, lim.MaxTotalBytes)
		}
		if !wt.link(path.Join(g.Prefix, name), e.Hash, blob.Size, target) {
			if err := writeBlob(blob, target, mode); err != nil {
				return notes, fmt.Errorf("%s: %s: %w", c, name, err)
			}
		}
		g.written.put(wk, writtenFile{target, blob.Size})
	}
	return notes, nil
}

// local: a slash path of relative, named components (no "..", no ".git").
func local(name string) bool {
	if name == "" || strings.HasPrefix(name, "/") || path.Clean(name) != name {
		return false
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." || part == "." || strings.EqualFold(part, ".git") {
			return false
		}
	}
	return filepath.IsLocal(filepath.FromSlash(name))
}

// dirMaker makes the directories of one tree, each once: a tree's files
// are many more than its directories, and asking the file system again
// for each file's directory costs a system call per path component.
type dirMaker map[string]bool

func (m dirMaker) mkdir(dir string) error {
	if m[dir] {
		return nil
	}
	// The walk names a directory after its parent: one mkdir, the whole
	// path only when that fails.
	if err := os.Mkdir(dir, 0o755); err != nil && !m[filepath.Dir(dir)] {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	} else if err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	m[dir] = true
	return nil
}

// worktree is the repository's work tree as Materialize links from it: a
// file checked out with the blob's very content (its Git hash the same)
// is linked into the tree rather than read from the object store and
// written again — most of a tree's files, when one side of the diff is
// the checkout. Opened as an os.Root (no symlink followed out of it);
// nil when it cannot be, and given up on the first link the file system
// refuses (the tree on another file system).
type worktree struct {
	root *os.Root
	top  string
	off  bool
}

func (g *Repo) worktree() *worktree {
	root, err := os.OpenRoot(g.Top)
	if err != nil {
		return &worktree{off: true}
	}
	return &worktree{root: root, top: g.Top}
}

func (w *worktree) close() {
	if w.root != nil {
		_ = w.root.Close()
	}
}

// link links the work tree's file rel (slash-separated, relative to the
// top) to target when it is a regular file holding blob hash (size bytes).
// The trees are private and their loads replace a file rather than write
// through it (fluxrepo rewriteFile), so the checkout is never changed.
func (w *worktree) link(rel string, hash plumbing.Hash, size int64, target string) bool {
	if w.off {
		return false
	}
	name := filepath.FromSlash(rel)
	fi, err := w.root.Lstat(name)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != size {
		return false
	}
	b, err := w.root.ReadFile(name)
	if err != nil || int64(len(b)) != size || plumbing.ComputeHash(plumbing.BlobObject, b) != hash {
		return false
	}
	if err := os.Link(filepath.Join(w.top, name), target); err != nil {
		w.off = true // another file system, or links refused: write
		return false
	}
	return true
}

func writeBlob(b *object.Blob, target string, mode os.FileMode) error {
	rd, err := b.Reader()
	if err != nil {
		return err
	}
	defer rd.Close()
	// O_EXCL: a path written twice (a case clash on a case-insensitive
	// file system) is refused rather than overwritten through a link.
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, io.LimitReader(rd, b.Size)); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Extract materializes c into a new private temporary directory and
// returns it with its removal; dir is the repository directory to load
// (Prefix applied).
func (g *Repo) Extract(c Commit, lim Limits) (dir string, notes []string, cleanup func(), err error) {
	tmp, err := os.MkdirTemp("", "bootstrap-rev-")
	if err != nil {
		return "", nil, nil, err
	}
	cleanup = func() { os.RemoveAll(tmp) }
	dir = filepath.Join(tmp, "tree")
	if err := os.Mkdir(dir, 0o700); err != nil {
		cleanup()
		return "", nil, nil, err
	}
	notes, err = g.Materialize(c, dir, lim)
	if err != nil {
		cleanup()
		return "", nil, nil, err
	}
	return dir, notes, cleanup, nil
}

// CheckRev checks a revision's spelling before anything is read: what git
// rev-parse could take (no whitespace or control character, no leading
// "-", not an option; at most 256 bytes). "" is allowed (the default).
func CheckRev(flag, rev string) error {
	if rev == "" {
		return nil
	}
	bad := len(rev) > 256 || strings.HasPrefix(rev, "-") ||
		strings.ContainsFunc(rev, func(r rune) bool { return r <= ' ' || r == 0x7f })
	if bad {
		return verify.InputErrorf("%s %q: not a revision: pass a branch, tag or commit (main, v1.2.0, HEAD~1, a1b2c3d)", flag, rev)
	}
	return nil
}
