package fluxrepo

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	fluxkustomize "github.com/fluxcd/pkg/kustomize"
	kloader "sigs.k8s.io/kustomize/api/pkg/loader"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/homelab-ops/bootstrap/internal/safeio"
)

// fetchedDir is the directory of the copy, beside each kustomization file,
// that holds the remote files fetched for it (Options.FetchRemote).
const fetchedDir = ".fetched"

// remoteKind is how kustomize reads a kustomization file's entry
// (remoteForm).
type remoteKind int

const (
	// remoteNone: a path inside the repository, read from the copy.
	remoteNone remoteKind = iota
	// remoteFile: a file kustomize's loader reads from elsewhere: an
	// http(s) URL it GETs (kustomize api v0.21 internal/loader
	// fileloader.go IsRemoteFile, Load), or another path outside the
	// repository (an absolute one).
	remoteFile
	// remoteBase: a repository kustomize clones (internal/git
	// repospec.go NewRepoSpecFromURL, through FileLoader.New).
	remoteBase
)

// remoteForm classifies entry e the one way both the offline holes
// (offlineWhy) and --fetch-remote (leaveOutOffline) read it. Not local is
// fluxcd/pkg kustomize IsLocalRelativePath's rule (kustomize's own list of
// repository prefixes: git::, gh:, ssh://, http(s)://, git@, github.com/).
// A generator file (!e.dir) is only ever loaded as a file. A resource,
// component or base (e.dir) is a base unless it is an http(s) URL of a
// file: kustomize's accumulateResources (internal/target/kusttarget.go)
// GETs a URL as a file first and clones it when that is no YAML, so a URL
// that spells a repository (?ref= or ?version=, a //path, a .git segment)
// or a directory (a last segment without an extension) is taken for the
// base it names.
func remoteForm(e entry) remoteKind {
	p := e.path
	switch {
	case fluxkustomize.IsLocalRelativePath(p):
		return remoteNone
	case !e.dir:
		return remoteFile
	case !isHTTP(p):
		if filepath.IsAbs(p) {
			return remoteFile
		}
		return remoteBase
	}
	u, query, _ := strings.Cut(p, "?")
	if q, err := url.ParseQuery(query); err == nil && (q.Has("ref") || q.Has("version")) {
		return remoteBase
	}
	_, rest, _ := strings.Cut(u, "://")
	segs := strings.Split(rest, "/")
	if strings.Contains(rest, "//") || !strings.Contains(segs[len(segs)-1], ".") {
		return remoteBase
	}
	for _, s := range segs {
		if strings.HasSuffix(s, ".git") {
			return remoteBase
		}
	}
	return remoteFile
}

// isHTTP says p is an http(s) URL (kustomize's IsRemoteFile schemes).
func isHTTP(p string) bool {
	l := strings.ToLower(p)
	return strings.HasPrefix(l, "https://") || strings.HasPrefix(l, "http://")
}

// fetch gets url into dir/.fetched (in the copy) and returns its path
// relative to dir: one GET as kustomize's loader does it (no credentials),
// 200 only, at most MaxFileBytes within FetchTimeout.
func (l *loader) fetch(dir, url string) (string, error) {
	max := l.env.Options.MaxFileBytes
	c := &http.Client{Timeout: FetchTimeout}
	resp, err := c.Get(url)
	if err != nil {
		return "", fmt.Errorf("GET: %w", redactURL(err, url))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET: %s", resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return "", fmt.Errorf("read: %w", redactURL(err, url))
	}
	if int64(len(b)) > max {
		return "", fmt.Errorf("larger than this tool's read bound (%s)", bytesText(max))
	}
	if line, why := safeio.AliasBomb(b); why != "" {
		return "", fmt.Errorf("line %d: %s", line, why)
	}
	sum := sha256.Sum256([]byte(url))
	name := hex.EncodeToString(sum[:8]) + "-" + path.Base(strings.SplitN(url, "?", 2)[0])
	if err := os.MkdirAll(filepath.Join(dir, fetchedDir), 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, fetchedDir, name), b, 0o600); err != nil {
		return "", err
	}
	return fetchedDir + "/" + name, nil
}

// redactURL keeps a URL's credentials out of an error: raw, and its
// userinfo wherever the message repeats it, shown as net/url's
// (*URL).Redacted (user:xxxxx@), a user without a password (a token
// spelled as the user) as xxxxx@. A URL that does not parse keeps the
// rule that needs no parse: whatever stands between :// and @ is masked.
func redactURL(err error, raw string) error {
	msg := err.Error()
	u, perr := url.Parse(raw)
	if perr != nil {
		if i, j := strings.Index(raw, "://"), strings.LastIndex(raw, "@"); i >= 0 && j > i {
			return errors.New(strings.ReplaceAll(msg, raw[i+3:j+1], "xxxxx@"))
		}
		return err
	}
	if u.User == nil {
		return err
	}
	shown := *u
	if _, ok := u.User.Password(); !ok {
		shown.User = url.User("xxxxx")
	}
	red := shown.Redacted()
	msg = strings.ReplaceAll(msg, raw, red)
	if i, j := strings.Index(raw, "://"), strings.LastIndex(raw, "@"); i >= 0 && j > i {
		_, after, _ := strings.Cut(red, "://")
		userinfo, _, _ := strings.Cut(after, "@")
		msg = strings.ReplaceAll(msg, raw[i+3:j+1], userinfo+"@")
	}
	return errors.New(msg)
}

// replaceValue sets every scalar of n whose value is old to new: the
// entry as written, in whichever list holds it.
func replaceValue(n *kyaml.RNode, old, new string) {
	var walk func(y *kyaml.Node)
	walk = func(y *kyaml.Node) {
		if y.Kind == kyaml.ScalarNode && y.Value == old {
			y.Value = new
		}
		for _, c := range y.Content {
			walk(c)
		}
	}
	walk(n.YNode())
}

// fetchBase clones the remote base url with kustomize's own remote loader
// (sigs.k8s.io/kustomize/api FileLoader.New: git.NewRepoSpecFromURL, then
// git through its cloner, with its 27 s timeout per git command), copies
// the clone into dir/.fetched as source-controller archives a repository
// (copyRepo: regular files, no symlink, each file within MaxFileBytes, no
// alias bomb) and returns the base's path there, relative to dir.
func (l *loader) fetchBase(dir, url string) (string, error) {
	ldr, err := kloader.NewFileLoaderAtRoot(filesys.MakeFsOnDisk()).New(url)
	if err != nil {
		return "", fmt.Errorf("clone: %w", redactURL(err, url))
	}
	defer ldr.Cleanup() //nolint:errcheck // a temporary clone
	base := ldr.Root()
	// The clone's root holds .git; the base may reach its siblings.
	clone := base
	for clone != filepath.Dir(clone) {
		if st, err := os.Lstat(filepath.Join(clone, ".git")); err == nil && st.IsDir() {
			break
		}
		clone = filepath.Dir(clone)
	}
	if clone == filepath.Dir(clone) {
		clone = base
	}
	sub, err := filepath.Rel(clone, base)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(url))
	dst := filepath.Join(dir, fetchedDir, hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return "", err
	}
	notes, bombs, _, err := copyRepo(clone, dst, l.env.Options.MaxFileBytes)
	switch {
	case err != nil:
		return "", fmt.Errorf("copy the clone: %w", err)
	case len(bombs) > 0:
		return "", fmt.Errorf("the clone holds a YAML alias bomb")
	}
	for _, n := range notes {
		l.env.Notes = append(l.env.Notes, "fetched "+redactURL(fmt.Errorf("%s", url), url).Error()+": "+n)
	}
	return filepath.ToSlash(filepath.Join(fetchedDir, hex.EncodeToString(sum[:8]), sub)), nil
}
