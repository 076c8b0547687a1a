package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/homelab-ops/bootstrap/internal/input"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// Options are a --serve run's inputs.
type Options struct {
	// Addr is --serve's ADDR: host:port, :port or host; "" picks the local
	// address this machine reaches the API server from, and a free port.
	Addr string
	// URL is --serve-url: the base URL handed to the cluster instead of
	// the listen address (a DNS name, NAT); "" means https://ADDR.
	URL string
	// For is --serve-for.
	For time.Duration
	// Repo is the repository directory.
	Repo string
	// Ref is the root's GitRepository's spec.ref (nil: none): what is
	// served follows it (MakeSnapshot).
	Ref *sourcev1.GitRepositoryRef
	// Namespace and Name are the root's source.
	Namespace, Name string
	// OCI is set when the root's source is an OCIRepository: the work
	// tree's commit is served as a Flux OCI artifact at OCI.Tag, not as Git.
	OCI *OCIOptions
	// APIServer is the cluster's API server URL (the state key, and the
	// default address's route).
	APIServer string
	Dirs      Dirs
	// Command runs `serve run`; the state directory is appended as its
	// last argument.
	Command []string
	Kube    Kube
	DryRun  bool
}

// OCIOptions are an OCI root's served artifact.
type OCIOptions struct {
	// Tag is the tag served (OCITagOf the declared ref); Why says why.
	Tag, Why string
}

// Validate checks the flags alone (before anything is read or bound).
func (o Options) Validate() error {
	var errs []error
	if o.For <= 0 {
		errs = append(errs, verify.InputErrorf("--serve-for %s: must be positive, e.g. 24h", o.For))
	}
	if o.URL != "" {
		if err := input.ValidGitURL("--serve-url", o.URL); err != nil {
			errs = append(errs, err)
		} else if u, _ := url.Parse(o.URL); u.Scheme != "https" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			errs = append(errs, verify.InputErrorf("--serve-url %s: want the base URL the nodes reach this machine at, https://HOST[:PORT] with no path (the repository is served at /%s.git)", o.URL, RepoName))
		}
	}
	if o.Addr != "" {
		if _, _, err := splitAddr(o.Addr); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// splitAddr reads ADDR as host:port, :port or host (port 0: a free one).
func splitAddr(addr string) (host string, port int, err error) {
	if addr == "" {
		return "", 0, nil // the default: the route to the API server, a free port
	}
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		h, p = addr, "0"
		if ip := net.ParseIP(addr); ip == nil && (addr == "" || addr[0] == '[' || addr[0] == ':') {
			return "", 0, verify.InputErrorf("--serve %q: want HOST:PORT, :PORT or HOST, e.g. 192.168.1.10:8443", addr)
		}
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 0 || n > 65535 {
		return "", 0, verify.InputErrorf("--serve %q: port %q is not a number from 0 to 65535", addr, p)
	}
	return h, n, nil
}

// Prepared is a temporary source ready to start: the snapshot made, the
// address bound, the credentials made. Nothing has reached the cluster.
type Prepared struct {
	o        Options
	Dir      string
	Snapshot *Snapshot
	creds    *Credentials
	ln       *net.TCPListener
	// URL is the repository URL the GitRepository will read.
	URL string
	// Replaces is the server this one replaces (nil when none runs).
	Replaces *State
	// Started is the serving process, once Start ran.
	Started *State
	// created is the OCI artifact's creation time.
	created time.Time
}

// Prepare does everything a --serve run may refuse before its first request
// to the cluster: the ref (one --serve cannot stand for is refused first),
// the snapshot (a dirty tree or a checkout that is not the declared ref is
// refused),
// the address (one that cannot be bound is refused, naming it), the
// credentials. A server this machine already runs for the cluster on the
// same address is stopped first (not on a dry run).
func Prepare(ctx context.Context, o Options) (*Prepared, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.OCI != nil {
		o.Ref = ociGitRef(ctx, o.Repo)
	}
	if _, err := WantOf(o.Ref); err != nil {
		return nil, err
	}
	p := &Prepared{o: o, Dir: o.Dirs.For(o.APIServer)}
	if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		return nil, verify.InputErrorf("serve state %s: %w (set BOOTSTRAP_STATE_DIR)", p.Dir, err)
	}
	old, err := ReadState(p.Dir)
	if err != nil {
		return nil, err
	}
	if running, _ := Running(p.Dir); running && old != nil {
		p.Replaces = old
	}
	host, port, err := splitAddr(o.Addr)
	if err != nil {
		return nil, err
	}
	if host == "" {
		if host, err = routeTo(o.APIServer); err != nil {
			return nil, verify.InputErrorf("--serve: no local address routes to the API server %s (%v): pass --serve ADDR", o.APIServer, err)
		}
	}
	listen := net.JoinHostPort(host, strconv.Itoa(port))
	ln, err := net.Listen("tcp", listen)
	if err != nil && errors.Is(err, syscall.EADDRINUSE) && p.Replaces != nil && p.Replaces.Listen == listen && !o.DryRun {
		// Our own earlier server holds the address: it is replaced.
		if _, serr := Stop(p.Dir, 5*time.Second); serr != nil {
			return nil, serr
		}
		ln, err = net.Listen("tcp", listen)
	}
	switch {
	case err != nil && errors.Is(err, syscall.EADDRINUSE) && p.Replaces != nil && p.Replaces.Listen == listen:
		// A dry run: the address is this cluster's running server's.
	case err != nil:
		return nil, verify.InputErrorf("--serve %s: cannot listen: %v: pick a free port (--serve HOST:PORT) or an address of this machine", listen, err)
	default:
		p.ln = ln.(*net.TCPListener)
		listen = p.ln.Addr().String()
	}
	base := "https://" + listen
	if o.URL != "" {
		base = o.URL
	}
	u, _ := url.Parse(base)
	p.URL = RepoURL(u.Scheme + "://" + u.Host)
	if o.OCI != nil {
		p.URL = sourcev1.OCIRepositoryPrefix + OCIRef(u.Host)
	}
	if p.creds, err = NewCredentials(u.Hostname(), o.For); err != nil {
		p.Close()
		return nil, err
	}
	snapDir := filepath.Join(p.Dir, fmt.Sprintf("repo-%d", time.Now().UnixNano()))
	if p.Snapshot, err = MakeSnapshot(ctx, o.Repo, o.Ref, snapDir); err != nil {
		_ = os.RemoveAll(snapDir)
		p.Close()
		return nil, err
	}
	if o.OCI != nil {
		if err := p.ociArtifact(ctx, snapDir); err != nil {
			p.Close()
			return nil, err
		}
	}
	return p, nil
}

// ociArtifact extracts the snapshot's commit and builds its artifact once
// here: the revision the OCIRepository must reach is known before the
// serving process starts (which builds the same from the same tree).
func (p *Prepared) ociArtifact(ctx context.Context, snapDir string) error {
	if err := extractTree(ctx, p.Snapshot, treeDir(snapDir)); err != nil {
		return err
	}
	p.created = time.Now().UTC().Truncate(time.Second)
	st := &State{Origin: p.Origin(), Commit: p.Snapshot.Commit, Created: p.created}
	_, rev, err := OCIHandler(treeDir(snapDir), p.o.OCI.Tag, p.creds.Token, ociMeta(st))
	if err != nil {
		return err
	}
	p.Snapshot.revision = rev
	return nil
}

// routeTo is the local address this machine reaches the API server from
// (a UDP "connect" sends nothing): what a node on the same network reaches.
func routeTo(apiServer string) (string, error) {
	u, err := url.Parse(apiServer)
	if err != nil || u.Hostname() == "" {
		return "", fmt.Errorf("not a URL: %q", apiServer)
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	c, err := net.Dial("udp", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		return "", err
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).IP.String(), nil
}

// SecretName is the Secret the GitRepository reads the credentials from.
func (p *Prepared) SecretName() string { return SecretName }

// Secret is that Secret, in the source's namespace: for an OCI root the
// dockerconfigjson Secret that is also the certSecretRef (OCISecret).
func (p *Prepared) Secret() (*unstructured.Unstructured, error) {
	if p.o.OCI != nil {
		host, _, _ := strings.Cut(strings.TrimPrefix(p.URL, sourcev1.OCIRepositoryPrefix), "/")
		return p.creds.OCISecret(p.o.Namespace, host)
	}
	return p.creds.Secret(p.o.Namespace)
}

// OCI is the served artifact's options (nil: Git is served).
func (p *Prepared) OCI() *OCIOptions { return p.o.OCI }

// Origin says where the served commit came from.
func (p *Prepared) Origin() string { return p.Snapshot.Describe(p.o.Repo) }

// Start starts the serving process and proves it serves.
func (p *Prepared) Start(ctx context.Context) (*State, error) {
	if p.ln == nil {
		return nil, errors.New("serve: no bound address (a dry run)")
	}
	// One server per cluster: the one it replaces lets go of the state
	// directory first.
	if _, err := Stop(p.Dir, 5*time.Second); err != nil {
		return nil, err
	}
	cmd := append(append([]string{}, p.o.Command...), p.Dir)
	st, err := Start(ctx, StartOptions{Dir: p.Dir, Command: cmd, Listener: p.ln, Snapshot: p.Snapshot, Creds: p.creds, Kube: p.o.Kube,
		URL: p.URL, Namespace: p.o.Namespace, Name: p.o.Name, Cluster: p.o.APIServer, For: p.o.For, Origin: p.Origin(),
		OCI: p.o.OCI != nil, Created: p.created})
	p.ln = nil
	if err != nil {
		return nil, err
	}
	p.Started = st
	return st, nil
}

// Close releases what a run that did not start the server holds: the
// address and the snapshot.
func (p *Prepared) Close() {
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	if p.Started == nil && p.Snapshot != nil {
		_ = os.RemoveAll(filepath.Dir(p.Snapshot.Bare))
	}
}

// Abort stops a server started for a sync that did not apply.
func (p *Prepared) Abort() {
	if p.Started != nil {
		_, _ = Stop(p.Dir, 5*time.Second)
		p.Started = nil
	}
	p.Close()
}
