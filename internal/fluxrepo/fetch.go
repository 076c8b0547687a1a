package fluxrepo

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"

	kloader "sigs.k8s.io/kustomize/api/pkg/loader"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/homelab-ops/bootstrap/internal/safeio"
)

// fetchedDir is the directory of the copy, beside each kustomization file,
// that holds the remote files fetched for it (Options.FetchRemote).
const fetchedDir = ".fetched"

// remoteFile says whether e names a remote file kustomize's loader fetches
// over HTTP(S) (a resource URL or a generator file), not a remote base,
// which it clones with git (sigs.k8s.io/kustomize/api/loader: IsRemoteFile
// is an http(s) URL that does not parse as a repository spec).
func remoteFile(e entry) bool {
	u := e.path
	if !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
		return false
	}
	// A repository spec: ?ref=, a //path, or a .git URL; kustomize clones those.
	rest := u[strings.Index(u, "//")+2:]
	return !strings.Contains(u, "?ref=") && !strings.Contains(u, "?version=") && !strings.Contains(rest, "//") && !strings.Contains(u, ".git")
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

// redactURL keeps a URL's credentials (user:password@) out of an error.
func redactURL(err error, url string) error {
	if i, j := strings.Index(url, "://"), strings.Index(url, "@"); i >= 0 && j > i {
		return fmt.Errorf("%s", strings.ReplaceAll(err.Error(), url[i+3:j+1], "***@"))
	}
	return err
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
