// Package gitserver serves bare Git repositories over smart HTTP, with push,
// on a loopback port, through Git's own git-http-backend (Debian package
// git). Flux's GitRepository only accepts http(s) and ssh URLs, so git
// daemon would not do. Each Server has its own port and root, so tests can
// run several (a temporary and a final source, for instance).
package gitserver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// DefaultBackend is where Debian's git package installs git-http-backend.
const DefaultBackend = "/usr/lib/git-core/git-http-backend"

// Server is a running Git HTTP server.
type Server struct {
	// Root holds the bare repositories (<name>.git).
	Root string
	// URL is http://127.0.0.1:<port>.
	URL string

	srv *http.Server
	ln  net.Listener
}

// Start serves root on a free loopback port until Close. backend "" means
// DefaultBackend.
func Start(root, backend string) (*Server, error) { return StartOn(root, backend, "127.0.0.1:0") }

// StartOn is Start on addr (a port chosen earlier, e.g. for a URL that must
// be known before its server exists).
func StartOn(root, backend, addr string) (*Server, error) {
	if backend == "" {
		backend = DefaultBackend
	}
	if _, err := os.Stat(backend); err != nil {
		return nil, fmt.Errorf("git-http-backend not found at %s: install Debian's git (hack/sandbox/install-deps.sh): %w", backend, err)
	}
	if _, err := exec.LookPath("git"); err != nil {
		return nil, fmt.Errorf("git not on PATH: install it (hack/sandbox/install-deps.sh): %w", err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("git server root: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("git server listen: %w", err)
	}
	h := &cgi.Handler{
		Path: backend,
		Root: "/",
		Env: []string{
			"GIT_PROJECT_ROOT=" + root,
			"GIT_HTTP_EXPORT_ALL=1",
			// Anonymous push is refused unless a user is set or the repo
			// enables receivepack; both, to be explicit.
			"REMOTE_USER=sandbox",
		},
	}
	s := &Server{Root: root, URL: "http://" + ln.Addr().String(), ln: ln}
	s.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

// Repo is a bare repository on a Server with a working clone for commits.
type Repo struct {
	// Name is the repository name without .git.
	Name string
	// URL is what a GitRepository's spec.url takes.
	URL string
	// Branch is the branch commits go to.
	Branch string

	bare string
	work string
}

// CreateRepo creates name.git from the files in fixture (may be "" for an
// empty first commit) and returns it with the first commit's SHA.
func (s *Server) CreateRepo(ctx context.Context, name, fixture string) (*Repo, string, error) {
	bare := filepath.Join(s.Root, name+".git")
	if _, err := os.Stat(bare); err == nil {
		return nil, "", fmt.Errorf("git repo %s already exists in %s", name, s.Root)
	}
	if err := run(ctx, "", "git", "init", "--quiet", "--bare", "--initial-branch=main", bare); err != nil {
		return nil, "", err
	}
	if err := run(ctx, bare, "git", "config", "http.receivepack", "true"); err != nil {
		return nil, "", err
	}
	work, err := os.MkdirTemp("", "gitserver-work-")
	if err != nil {
		return nil, "", err
	}
	r := &Repo{Name: name, URL: s.URL + "/" + name + ".git", Branch: "main", bare: bare, work: work}
	if err := run(ctx, work, "git", "init", "--quiet", "--initial-branch=main"); err != nil {
		return nil, "", err
	}
	if err := run(ctx, work, "git", "remote", "add", "origin", r.URL); err != nil {
		return nil, "", err
	}
	sha, err := r.Commit(ctx, fixture, nil, "initial commit from "+filepath.Base(fixture))
	if err != nil {
		return nil, "", err
	}
	return r, sha, nil
}

// Commit replaces the tree with fixture's files (if fixture != ""), then
// writes files (path → content; "" content deletes), commits, pushes over
// HTTP and returns the new commit SHA.
func (r *Repo) Commit(ctx context.Context, fixture string, files map[string]string, msg string) (string, error) {
	if fixture != "" {
		entries, err := os.ReadDir(r.work)
		if err != nil {
			return "", err
		}
		for _, e := range entries {
			if e.Name() != ".git" {
				if err := os.RemoveAll(filepath.Join(r.work, e.Name())); err != nil {
					return "", err
				}
			}
		}
		if err := copyTree(fixture, r.work); err != nil {
			return "", fmt.Errorf("copy fixture %s: %w", fixture, err)
		}
	}
	for p, content := range files {
		full := filepath.Join(r.work, filepath.FromSlash(p))
		if content == "" {
			if err := os.Remove(full); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return "", err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	if err := run(ctx, r.work, "git", "add", "--all"); err != nil {
		return "", err
	}
	if err := run(ctx, r.work, "git", "-c", "user.name=sandbox", "-c", "user.email=sandbox@example.invalid",
		"commit", "--quiet", "--allow-empty", "-m", msg); err != nil {
		return "", err
	}
	if err := run(ctx, r.work, "git", "push", "--quiet", "origin", "HEAD:refs/heads/"+r.Branch); err != nil {
		return "", fmt.Errorf("push to %s: %w", r.URL, err)
	}
	out, err := exec.CommandContext(ctx, "git", "-C", r.work, "rev-parse", "HEAD").Output()
	if err != nil {
		return "", fmt.Errorf("git rev-parse: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Revision is the Flux artifact revision of sha on the repo's branch.
func (r *Repo) Revision(sha string) string { return r.Branch + "@sha1:" + sha }

// Close removes the working clone (the bare repo stays under the server root).
func (r *Repo) Close() error { return os.RemoveAll(r.work) }

func run(ctx context.Context, dir string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	// Hermetic: no user or system git config changes behaviour.
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}
