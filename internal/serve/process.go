package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/homelab-ops/bootstrap/internal/safeio"
)

// Kube is the cluster access the serving process watches the GitRepository
// with: the parent's own, handed over on stdin (it may hold a token or a
// client key, so never on argv or in a file).
type Kube struct {
	Host            string                           `json:"host"`
	TLS             rest.TLSClientConfig             `json:"tls"`
	BearerToken     string                           `json:"bearerToken,omitempty"`
	BearerTokenFile string                           `json:"bearerTokenFile,omitempty"`
	Username        string                           `json:"username,omitempty"`
	Password        string                           `json:"password,omitempty"`
	Impersonate     rest.ImpersonationConfig         `json:"impersonate"`
	Exec            *clientcmdapi.ExecConfig         `json:"exec,omitempty"`
	AuthProvider    *clientcmdapi.AuthProviderConfig `json:"authProvider,omitempty"`
}

// KubeOf takes what a new process needs to reach the cluster from cfg.
func KubeOf(cfg *rest.Config) Kube {
	return Kube{Host: cfg.Host, TLS: cfg.TLSClientConfig, BearerToken: cfg.BearerToken, BearerTokenFile: cfg.BearerTokenFile,
		Username: cfg.Username, Password: cfg.Password, Impersonate: cfg.Impersonate, Exec: cfg.ExecProvider, AuthProvider: cfg.AuthProvider}
}

// REST is the config a serving process connects with.
func (k Kube) REST() *rest.Config {
	return &rest.Config{Host: k.Host, TLSClientConfig: k.TLS, BearerToken: k.BearerToken, BearerTokenFile: k.BearerTokenFile,
		Username: k.Username, Password: k.Password, Impersonate: k.Impersonate, ExecProvider: k.Exec, AuthProvider: k.AuthProvider,
		UserAgent: "bootstrap-serve", QPS: 5, Burst: 10}
}

// handoff is what the parent writes to the serving process's stdin.
type handoff struct {
	State State       `json:"state"`
	Creds Credentials `json:"creds"`
	Kube  Kube        `json:"kube"`
	// Arm bounds the wait for the GitRepository to point at the source
	// at all (the sync that was to apply it failed or was killed).
	Arm time.Duration `json:"arm"`
}

// StartOptions describe a server to start.
type StartOptions struct {
	// Dir is the cluster's state directory (Dirs.For).
	Dir string
	// Command is this program and the arguments that run `serve run`
	// with Dir (e.g. bootstrap serve run --state-dir DIR).
	Command []string
	// Listener is bound already (an address that cannot be bound is an
	// input error found before the first request); it passes to the child.
	Listener *net.TCPListener
	Snapshot *Snapshot
	Creds    *Credentials
	Kube     Kube
	// URL is what the GitRepository reads; Namespace/Name name it.
	URL, Namespace, Name string
	// Cluster names the API server (for status).
	Cluster string
	// For is how long the source serves at most (--serve-for).
	For time.Duration
	// Origin says where the served commit came from.
	Origin string
	// OCI serves the snapshot's tree as an OCI artifact, made at Created.
	OCI     bool
	Created time.Time
}

// RepoURL is the URL of the served repository at base (https://host:port).
func RepoURL(base string) string { return base + "/" + RepoName + ".git" }

// Start runs the serving process detached (its own session: it outlives
// this command and an Ansible play), hands it the listener and the
// credentials, records its state, and proves it serves: an authenticated
// fetch of the refs over TLS, trusting only the run's CA, lists the
// snapshot's commit.
func Start(ctx context.Context, o StartOptions) (*State, error) {
	f, err := o.Listener.File()
	if err != nil {
		return nil, fmt.Errorf("serve: hand over the listener: %w", err)
	}
	defer f.Close()
	logPath := filepath.Join(o.Dir, logFile)
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("serve: log: %w", err)
	}
	defer logf.Close()
	now := time.Now().UTC().Truncate(time.Second)
	st := State{URL: o.URL, Listen: o.Listener.Addr().String(), Log: logPath, Cluster: o.Cluster, Namespace: o.Namespace, Name: o.Name,
		Revision: o.Snapshot.Revision(), Origin: o.Origin, Started: now, Until: now.Add(o.For), Repo: filepath.Dir(o.Snapshot.Bare),
		Kind: sourcev1.GitRepositoryKind}
	if o.OCI {
		st.Kind, st.Commit, st.Created = sourcev1.OCIRepositoryKind, o.Snapshot.Commit, o.Created
	}
	cmd := exec.Command(o.Command[0], o.Command[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{f} // fd 3
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Dir = "/"
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("serve: start %s: %w", o.Command[0], err)
	}
	st.PID = cmd.Process.Pid
	// Reap it if it ends while this process lives; after that it is init's.
	go func() { _ = cmd.Wait() }()
	err = json.NewEncoder(stdin).Encode(handoff{State: st, Creds: *o.Creds, Kube: o.Kube, Arm: 10 * time.Minute})
	if cerr := stdin.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("serve: hand over to process %d: %w (its log: %s)", st.PID, err, logPath)
	}
	if err := writeState(o.Dir, &st); err != nil {
		_ = cmd.Process.Kill()
		return nil, err
	}
	// This process keeps no copy of the socket: when the child dies, the
	// address refuses connections.
	_ = o.Listener.Close()
	probe := func() error { return Probe(ctx, "https://"+st.Listen, o.Creds, o.Snapshot.Commit) }
	if o.OCI {
		probe = func() error { return ProbeOCI(ctx, "https://"+st.Listen, o.Creds, st.Revision) }
	}
	if err := probe(); err != nil {
		_, _ = Stop(o.Dir, 2*time.Second)
		return nil, fmt.Errorf("serve: the process started (pid %d) but does not serve: %w (its log: %s)", st.PID, err, logPath)
	}
	return &st, nil
}

// Probe fetches the refs of the served repository at base with the
// credentials and wants commit among them.
func Probe(ctx context.Context, base string, c *Credentials, commit string) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, RepoURL(base)+"/info/refs?service=git-upload-pack", nil)
	if err != nil {
		return err
	}
	req.SetBasicAuth(Username, c.Token)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: c.ClientTLS()}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := safeio.ReadLimited(resp.Body, 1<<20)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET info/refs: %s", resp.Status)
	}
	if !bytes.Contains(b, []byte(commit)) {
		return fmt.Errorf("GET info/refs: commit %s not advertised", commit)
	}
	return nil
}
