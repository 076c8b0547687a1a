package serve

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
}

// run runs git in dir for the test's own fixtures.
func run(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.invalid"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0"), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// checkout makes a repository on branch main with one committed file.
func checkout(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	run(t, dir, nil, "init", "--quiet", "--initial-branch=main")
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("a: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, dir, nil, "add", "a.yaml")
	run(t, dir, nil, "commit", "--quiet", "-m", "one")
	return dir
}

func TestSnapshotCheckout(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	repo := checkout(t)
	head := run(t, repo, nil, "rev-parse", "HEAD")
	s, err := MakeSnapshot(ctx, repo, mainRef, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !s.FromCheckout || s.Commit != head || s.Revision() != "main@sha1:"+head {
		t.Fatalf("snapshot %+v, want HEAD %s from the checkout", s, head)
	}
	if got := run(t, s.Bare, nil, "rev-parse", "refs/heads/main"); got != head {
		t.Fatalf("bare main at %s, want %s", got, head)
	}
	// A later commit in the checkout is not served: the snapshot is what was checked.
	if err := os.WriteFile(filepath.Join(repo, "a.yaml"), []byte("a: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, repo, nil, "commit", "--quiet", "-am", "two")
	if got := run(t, s.Bare, nil, "rev-parse", "refs/heads/main"); got != head {
		t.Fatalf("bare main moved to %s", got)
	}
}

func TestSnapshotRefuses(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	for _, c := range []struct {
		name, want string
		spoil      func(t *testing.T, repo string)
	}{
		{"modified file", "a.yaml", func(t *testing.T, repo string) {
			_ = os.WriteFile(filepath.Join(repo, "a.yaml"), []byte("a: dirty\n"), 0o644)
		}},
		{"untracked file", "new.yaml", func(t *testing.T, repo string) {
			_ = os.WriteFile(filepath.Join(repo, "new.yaml"), []byte("b: 1\n"), 0o644)
		}},
		{"other branch", "is on branch feature", func(t *testing.T, repo string) {
			run(t, repo, nil, "switch", "--quiet", "-c", "feature")
		}},
		{"detached", "detached HEAD", func(t *testing.T, repo string) {
			run(t, repo, nil, "switch", "--quiet", "--detach")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			repo := checkout(t)
			c.spoil(t, repo)
			_, err := MakeSnapshot(ctx, repo, mainRef, t.TempDir())
			if err == nil || !verify.IsInput(err) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want an input error naming %q, got %v", c.want, err)
			}
		})
	}
}

func TestSnapshotNotACheckout(t *testing.T) {
	needGit(t)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "clusters", "prod"), 0o755); err != nil {
		t.Fatal(err)
	}
	for p, b := range map[string]string{"clusters/prod/kustomization.yaml": "resources: []\n", ".gitignore": "*.yaml\n"} {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := MakeSnapshot(context.Background(), dir, mainRef, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	files := run(t, s.Bare, nil, "ls-tree", "-r", "--name-only", "main")
	if s.FromCheckout || !strings.Contains(files, "clusters/prod/kustomization.yaml") || !strings.Contains(s.Describe(dir), "not a Git checkout") {
		t.Fatalf("snapshot %+v of a plain directory; files %q", s, files)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the directory was written to: %v", err)
	}
}

func TestCredentials(t *testing.T) {
	for _, host := range []string{"192.0.2.7", "git.bootstrap.lan"} {
		c, err := NewCredentials(host, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(c.CAPEM)
		b, _ := pem.Decode(c.CertPEM)
		cert, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cert.Verify(x509.VerifyOptions{DNSName: host, Roots: pool}); err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		if _, err := cert.Verify(x509.VerifyOptions{DNSName: "other.lan", Roots: pool}); err == nil {
			t.Fatalf("%s: the certificate verifies for another host", host)
		}
		sec, err := c.Secret("flux-system")
		if err != nil {
			t.Fatal(err)
		}
		data := sec.Object["data"].(map[string]any)
		pw, _ := base64.StdEncoding.DecodeString(data["password"].(string))
		if string(pw) != c.Token || len(c.Token) < 40 || data["ca.crt"] == nil || sec.GetLabels()[SecretLabel] != "serve" {
			t.Fatalf("Secret %v", sec.Object)
		}
	}
}

// served starts the handler over TLS with the run's credentials.
func served(t *testing.T) (*Snapshot, *Credentials, *httptest.Server) {
	t.Helper()
	s, err := MakeSnapshot(context.Background(), checkout(t), mainRef, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCredentials("127.0.0.1", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	h, err := Handler(s, c.Token)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	if srv.TLS, err = c.TLSConfig(); err != nil {
		t.Fatal(err)
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return s, c, srv
}

func TestHandler(t *testing.T) {
	needGit(t)
	s, c, srv := served(t)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: c.ClientTLS()}}
	get := func(method, path, user, pass string) int {
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	refs := "/gitops.git/info/refs?service=git-upload-pack"
	for _, c2 := range []struct {
		name, method, path, user, pass string
		want                           int
	}{
		{"no token", "GET", refs, "", "", 401},
		{"wrong token", "GET", refs, Username, "wrong", 401},
		{"wrong user", "GET", refs, "admin", c.Token, 401},
		{"refs", "GET", refs, Username, c.Token, 200},
		{"push advertisement", "GET", "/gitops.git/info/refs?service=git-receive-pack", Username, c.Token, 403},
		{"push", "POST", "/gitops.git/git-receive-pack", Username, c.Token, 403},
		{"dumb HTTP", "GET", "/gitops.git/HEAD", Username, c.Token, 404},
		{"config file", "GET", "/gitops.git/config", Username, c.Token, 404},
		{"another repository", "GET", "/other.git/info/refs?service=git-upload-pack", Username, c.Token, 404},
		{"traversal", "GET", "/gitops.git/../../etc/passwd", Username, c.Token, 404},
	} {
		if got := get(c2.method, c2.path, c2.user, c2.pass); got != c2.want {
			t.Errorf("%s: %s %s: status %d, want %d", c2.name, c2.method, c2.path, got, c2.want)
		}
	}
	if err := Probe(context.Background(), srv.URL, c, s.Commit); err != nil {
		t.Fatalf("probe: %v", err)
	}
	wrong := *c
	wrong.Token = "nope"
	if err := Probe(context.Background(), srv.URL, &wrong, s.Commit); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("probe with a wrong token: %v", err)
	}
}

// TestGitClient clones with Git itself (the token in a header from the
// environment, never on argv), and a push is refused.
func TestGitClient(t *testing.T) {
	needGit(t)
	s, c, srv := served(t)
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, c.CAPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	auth := "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(Username+":"+c.Token))
	env := []string{"GIT_SSL_CAINFO=" + ca, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.extraHeader", "GIT_CONFIG_VALUE_0=" + auth}
	dst := filepath.Join(t.TempDir(), "clone")
	run(t, "", env, "clone", "--quiet", "--branch", "main", srv.URL+"/gitops.git", dst)
	if got := run(t, dst, nil, "rev-parse", "HEAD"); got != s.Commit {
		t.Fatalf("cloned %s, want %s", got, s.Commit)
	}
	run(t, dst, nil, "commit", "--quiet", "--allow-empty", "-m", "push me")
	cmd := exec.Command("git", "push", "origin", "HEAD:main")
	cmd.Dir = dst
	cmd.Env = append(append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0"), env...)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "403") {
		t.Fatalf("push: want refused with 403, got %v: %s", err, out)
	}
	if got := run(t, s.Bare, nil, "rev-parse", "refs/heads/main"); got != s.Commit {
		t.Fatalf("the served branch moved to %s", got)
	}
}

func TestPrepareRefusesBadAddress(t *testing.T) {
	needGit(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	repo := checkout(t)
	base := Options{For: time.Hour, Repo: repo, Ref: mainRef, Namespace: "flux-system", Name: "flux-system",
		APIServer: "https://127.0.0.1:6443", Dirs: Dirs{Root: t.TempDir()}}
	for _, c := range []struct{ addr, url, want string }{
		{taken.Addr().String(), "", "cannot listen"},
		{"192.0.2.1:8443", "", "cannot listen"}, // not this machine's
		{"127.0.0.1:99999", "", "port"},
		{"[::1", "", "--serve"},
		{"127.0.0.1:0", "http://git.lan", "https://HOST"},
		{"127.0.0.1:0", "https://user:pw@git.lan", "credentials"},
		{"127.0.0.1:0", "https://git.lan/some/path", "no path"},
	} {
		o := base
		o.Addr, o.URL = c.addr, c.url
		p, err := Prepare(context.Background(), o)
		if err == nil {
			p.Close()
		}
		if err == nil || !verify.IsInput(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--serve %s --serve-url %q: want an input error with %q, got %v", c.addr, c.url, c.want, err)
		}
	}
	o := base
	o.Addr = "127.0.0.1"
	o.For = 0
	if _, err := Prepare(context.Background(), o); err == nil || !strings.Contains(err.Error(), "--serve-for") {
		t.Errorf("--serve-for 0: %v", err)
	}
	o.For = time.Hour
	p, err := Prepare(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !strings.HasPrefix(p.URL, "https://127.0.0.1:") || !strings.HasSuffix(p.URL, "/gitops.git") || p.Snapshot.Commit == "" {
		t.Fatalf("prepared %s %+v", p.URL, p.Snapshot)
	}
	o.Addr = "" // the default: the address that routes to the API server
	d, err := Prepare(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if !strings.HasPrefix(d.URL, "https://127.0.0.1:") {
		t.Fatalf("default address: URL %s, want the loopback route to the API server", d.URL)
	}
	o.URL = "https://git.bootstrap.lan:9443"
	q, err := Prepare(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if q.URL != "https://git.bootstrap.lan:9443/gitops.git" {
		t.Fatalf("--serve-url: URL %s", q.URL)
	}
}

func TestDefaultAddressRoutesToAPIServer(t *testing.T) {
	host, err := routeTo("https://127.0.0.1:6443")
	if err != nil || host != "127.0.0.1" {
		t.Fatalf("route to loopback: %q %v", host, err)
	}
}
