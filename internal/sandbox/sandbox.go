// Package sandbox runs a real, local Kubernetes control plane (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler) with kwok standing
// in for kubelets, all as child processes on free loopback ports. The
// binaries come from hack/sandbox/build.sh. Nothing here is a mock: clients
// talk to a real API server over TLS with RBAC on.
package sandbox

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Binary names the sandbox needs in Config.BinDir.
const (
	BinEtcd                = "etcd"
	BinAPIServer           = "kube-apiserver"
	BinControllerManager   = "kube-controller-manager"
	BinScheduler           = "kube-scheduler"
	BinKwok                = "kwok"
	BinSourceController    = "source-controller"
	BinKustomizeController = "kustomize-controller"
	BinHelmController      = "helm-controller"
)

// ControlPlaneBinaries are the binaries Start needs.
var ControlPlaneBinaries = []string{BinEtcd, BinAPIServer, BinControllerManager, BinScheduler, BinKwok}

// NodeName is the fake node kwok manages.
const NodeName = "sandbox-node-0"

// Config says where the binaries are and how to start. Zero ports mean
// "pick a free loopback port".
type Config struct {
	// BinDir holds the binaries built by hack/sandbox/build.sh.
	BinDir string
	// StagesFile is kwok's stage configuration; default BinDir/../kwok-stages.yaml.
	StagesFile string
	// WorkDir receives pki/, etcd data, logs/ and kubeconfig; default a new temp dir.
	WorkDir string
	// EtcdPort and APIServerPort pin ports (0 = free port).
	EtcdPort, APIServerPort int
	// ReadyTimeout bounds each readiness wait; default 90s.
	ReadyTimeout time.Duration
	// Logger receives progress; default discards.
	Logger *slog.Logger
}

// Timings are measured during Start, from its beginning.
type Timings struct {
	APIReady  time.Duration
	NodeReady time.Duration
}

// Sandbox is a running control plane.
type Sandbox struct {
	// WorkDir holds everything the sandbox wrote.
	WorkDir string
	// LogDir holds one log file per process.
	LogDir string
	// KubeconfigPath is an admin (system:masters) kubeconfig.
	KubeconfigPath string
	// APIServerURL is https://127.0.0.1:<port>.
	APIServerURL string
	// PKI are the generated certificates.
	PKI *PKI
	// Timings of Start.
	Timings Timings

	logger       *slog.Logger
	rest         *rest.Config
	readyTimeout time.Duration
	// healthz reads the self-signed loopback /healthz of the controller
	// manager and the scheduler.
	healthz *http.Client

	mu    sync.Mutex
	procs []*Process // in start order
	// ready is how Start saw each component ready, for Restart.
	ready map[string]readyCheck
}

// readyCheck is a GET that must answer 200 with want in the body.
type readyCheck struct {
	url  string
	c    *http.Client
	want string
}

// FindBinDir returns the bin directory hack/sandbox/build.sh writes to,
// asking the script itself so the cache key has one definition. repoRoot is
// the repository root.
func FindBinDir(ctx context.Context, repoRoot string) (string, error) {
	if d := os.Getenv("BOOTSTRAP_SANDBOX_BIN"); d != "" {
		return d, nil
	}
	script := filepath.Join(repoRoot, "hack", "sandbox", "build.sh")
	out, err := exec.CommandContext(ctx, "bash", script, "--print").Output()
	if err != nil {
		return "", fmt.Errorf("locate sandbox binaries with %s --print: %w", script, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// CheckBinaries returns an error naming every binary missing from binDir,
// and how to build them.
func CheckBinaries(binDir string, names ...string) error {
	var missing []string
	for _, n := range names {
		st, err := os.Stat(filepath.Join(binDir, n))
		if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("sandbox binaries missing from %s: %s; build them with `make sandbox-build` (hack/sandbox/build.sh, ~10 min cold)",
			binDir, strings.Join(missing, ", "))
	}
	return nil
}

// Ports are picked below Linux's ephemeral range (32768-60999 by default):
// a port the kernel hands out with :0 can be handed out again moments later
// as the source port of an outgoing connection (the controllers open many),
// and the component that was given it then fails to bind.
const (
	portLow  = 20000
	portHigh = 32767
)

// FreePort returns a loopback TCP port that was free a moment ago, from a
// random point of a range no outgoing connection uses.
func FreePort() (int, error) {
	n := portHigh - portLow + 1
	start := rand.IntN(n)
	for i := range n {
		port := portLow + (start+i)%n
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		_ = l.Close()
		return port, nil
	}
	return 0, fmt.Errorf("find a free loopback port: every port in %d-%d is taken", portLow, portHigh)
}

// checkPortFree fails with a clear message if 127.0.0.1:port is taken.
func checkPortFree(what string, port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("%s port 127.0.0.1:%d is already in use (another sandbox or service?): stop it, or leave the port 0 to pick a free one: %w", what, port, err)
	}
	return l.Close()
}

// ports are the loopback ports one sandbox listens on.
type ports struct {
	etcd, etcdPeer, apiServer, controllerManager, scheduler int
}

// Start brings up etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok with one fake Ready node. On error everything it
// started is stopped again.
func Start(ctx context.Context, cfg Config) (_ *Sandbox, retErr error) {
	t0 := time.Now()
	cfg, err := withDefaults(cfg)
	if err != nil {
		return nil, err
	}
	pt, err := pickPorts(cfg.EtcdPort, cfg.APIServerPort)
	if err != nil {
		return nil, err
	}
	s, err := newSandbox(cfg, pt)
	if err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			s.Stop()
		}
	}()
	if s.PKI, err = GeneratePKI(filepath.Join(s.WorkDir, "pki")); err != nil {
		return nil, err
	}
	etcdURL, err := s.startEtcd(ctx, cfg, pt)
	if err != nil {
		return nil, err
	}
	if err := s.startAPIServer(ctx, cfg, pt, etcdURL); err != nil {
		return nil, err
	}
	s.Timings.APIReady = time.Since(t0)
	s.logger.Info("api server ready", "url", s.APIServerURL, "after", s.Timings.APIReady.Round(time.Millisecond))
	if err := s.writeKubeconfig(); err != nil {
		return nil, err
	}
	kcm, err := s.startControllerManager(cfg, pt)
	if err != nil {
		return nil, err
	}
	if err := s.startScheduler(ctx, cfg, pt); err != nil {
		return nil, err
	}
	if err := s.startKwok(cfg); err != nil {
		return nil, err
	}
	if err := s.createNode(ctx, cfg.ReadyTimeout); err != nil {
		return nil, err
	}
	s.Timings.NodeReady = time.Since(t0)
	s.logger.Info("node ready", "node", NodeName, "after", s.Timings.NodeReady.Round(time.Millisecond))
	// Waited for last: kwok and the node do not need it.
	if err := s.waitControllerManager(ctx, cfg, pt, kcm); err != nil {
		return nil, err
	}
	return s, nil
}

// newSandbox is the Sandbox that Start fills in, in cfg.WorkDir or a new
// temporary directory.
func newSandbox(cfg Config, pt ports) (*Sandbox, error) {
	work := cfg.WorkDir
	if work == "" {
		var err error
		if work, err = os.MkdirTemp("", "bootstrap-sandbox-"); err != nil {
			return nil, fmt.Errorf("sandbox work dir: %w", err)
		}
	}
	return &Sandbox{
		WorkDir:        work,
		LogDir:         filepath.Join(work, "logs"),
		KubeconfigPath: filepath.Join(work, "kubeconfig"),
		APIServerURL:   fmt.Sprintf("https://127.0.0.1:%d", pt.apiServer),
		logger:         cfg.Logger,
		readyTimeout:   cfg.ReadyTimeout,
		ready:          map[string]readyCheck{},
		healthz:        &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}, //nolint:gosec // self-signed loopback healthz
	}, nil
}

// withDefaults fills in cfg's defaults and checks that the binaries and
// kwok's stages are there.
func withDefaults(cfg Config) (Config, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.ReadyTimeout == 0 {
		cfg.ReadyTimeout = 90 * time.Second
	}
	if err := CheckBinaries(cfg.BinDir, ControlPlaneBinaries...); err != nil {
		return cfg, err
	}
	if cfg.StagesFile == "" {
		cfg.StagesFile = filepath.Join(filepath.Dir(cfg.BinDir), "kwok-stages.yaml")
	}
	if _, err := os.Stat(cfg.StagesFile); err != nil {
		return cfg, fmt.Errorf("kwok stages %s: %w; build them with `make sandbox-build`", cfg.StagesFile, err)
	}
	return cfg, nil
}

// pickPorts checks the pinned ports (non-zero) are free and picks a free
// one for every other.
func pickPorts(etcdPort, apiServerPort int) (ports, error) {
	pt := ports{etcd: etcdPort, apiServer: apiServerPort}
	// Each pick closes its probe, so two picks of this start could return
	// the same port: every port is picked once.
	taken := map[int]bool{}
	pick := func() (int, error) {
		for {
			p, err := FreePort()
			if err != nil || !taken[p] {
				taken[p] = true
				return p, err
			}
		}
	}
	for what, p := range map[string]int{"etcd": etcdPort, "kube-apiserver": apiServerPort} {
		if p != 0 {
			if err := checkPortFree(what, p); err != nil {
				return pt, err
			}
			taken[p] = true
		}
	}
	for _, p := range []*int{&pt.etcd, &pt.apiServer, &pt.etcdPeer, &pt.controllerManager, &pt.scheduler} {
		if *p != 0 {
			continue
		}
		var err error
		if *p, err = pick(); err != nil {
			return pt, err
		}
	}
	return pt, nil
}

func binPath(cfg Config, name string) string { return filepath.Join(cfg.BinDir, name) }

// startEtcd starts etcd and waits for its /health; it returns the client URL.
func (s *Sandbox) startEtcd(ctx context.Context, cfg Config, pt ports) (string, error) {
	// etcd over plain HTTP on loopback: it is never reachable off-host.
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", pt.etcd)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", pt.etcdPeer)
	etcd, err := s.start("etcd", binPath(cfg, BinEtcd), []string{
		"--name=sandbox",
		"--data-dir=" + filepath.Join(s.WorkDir, "etcd"),
		"--listen-client-urls=" + etcdURL, "--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=sandbox=" + peerURL,
		"--unsafe-no-fsync=true", // throwaway data: durability buys nothing
		"--log-level=warn",
	}, nil)
	if err != nil {
		return "", err
	}
	return etcdURL, s.waitHTTP(ctx, etcd, cfg.ReadyTimeout, etcdURL+"/health", http.DefaultClient, `"health":"true"`)
}

// startAPIServer starts kube-apiserver on etcdURL and waits for its /readyz.
func (s *Sandbox) startAPIServer(ctx context.Context, cfg Config, pt ports, etcdURL string) error {
	pki := s.PKI
	api, err := s.start("kube-apiserver", binPath(cfg, BinAPIServer), []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(pt.apiServer),
		"--cert-dir=" + filepath.Join(s.WorkDir, "apiserver-certs"),
		"--tls-cert-file=" + pki.ServingCert, "--tls-private-key-file=" + pki.ServingKey,
		"--client-ca-file=" + pki.CACert,
		"--service-account-key-file=" + pki.SAPub,
		"--service-account-signing-key-file=" + pki.SAKey,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--api-audiences=https://kubernetes.default.svc.cluster.local",
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--allow-privileged=true",
		"--enable-priority-and-fairness=false",
		"--endpoint-reconciler-type=none",
		"--v=1",
	}, nil)
	if err != nil {
		return err
	}
	adminTLS, err := s.adminHTTPClient()
	if err != nil {
		return err
	}
	return s.waitHTTP(ctx, api, cfg.ReadyTimeout, s.APIServerURL+"/readyz", adminTLS, "ok")
}

// startControllerManager starts kube-controller-manager without waiting:
// waitControllerManager does, once the node is up.
func (s *Sandbox) startControllerManager(cfg Config, pt ports) (*Process, error) {
	pki := s.PKI
	return s.start("kube-controller-manager", binPath(cfg, BinControllerManager), []string{
		"--kubeconfig=" + s.KubeconfigPath,
		"--authentication-kubeconfig=" + s.KubeconfigPath,
		"--authorization-kubeconfig=" + s.KubeconfigPath,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(pt.controllerManager),
		"--cert-dir=" + filepath.Join(s.WorkDir, "kcm-certs"),
		"--leader-elect=false",
		"--service-account-private-key-file=" + pki.SAKey,
		"--root-ca-file=" + pki.CACert,
		"--cluster-signing-cert-file=" + pki.CACert, "--cluster-signing-key-file=" + pki.CAKey,
		"--use-service-account-credentials=true",
		"--controllers=*,-nodeipam,-service-lb-controller,-cloud-node-lifecycle,-persistentvolume-binder,-attachdetach",
		"--v=1",
	}, nil)
}

// waitControllerManager waits until the controller manager has built its
// controllers. Its /healthz answers ok before they are built (each creates
// its service account through the API server, and one failure then ends
// the process, as an API server restart at that moment would); the
// controllers' own checks are registered once all are built, so it is
// ready when they are listed.
func (s *Sandbox) waitControllerManager(ctx context.Context, cfg Config, pt ports, kcm *Process) error {
	return s.waitHTTP(ctx, kcm, cfg.ReadyTimeout, fmt.Sprintf("https://127.0.0.1:%d/healthz?verbose", pt.controllerManager), s.healthz, "[+]serviceaccount-token-controller ok")
}

// startScheduler starts kube-scheduler and waits for its /healthz.
func (s *Sandbox) startScheduler(ctx context.Context, cfg Config, pt ports) error {
	sched, err := s.start("kube-scheduler", binPath(cfg, BinScheduler), []string{
		"--kubeconfig=" + s.KubeconfigPath,
		"--authentication-kubeconfig=" + s.KubeconfigPath,
		"--authorization-kubeconfig=" + s.KubeconfigPath,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(pt.scheduler),
		"--cert-dir=" + filepath.Join(s.WorkDir, "scheduler-certs"),
		"--leader-elect=false",
		"--v=1",
	}, nil)
	if err != nil {
		return err
	}
	return s.waitHTTP(ctx, sched, cfg.ReadyTimeout, fmt.Sprintf("https://127.0.0.1:%d/healthz", pt.scheduler), s.healthz, "ok")
}

// startKwok starts kwok for the nodes annotated kwok.x-k8s.io/node=fake;
// it has no health check of its own: createNode waits for the node.
func (s *Sandbox) startKwok(cfg Config) error {
	_, err := s.start("kwok", binPath(cfg, BinKwok), []string{
		"--kubeconfig=" + s.KubeconfigPath,
		"--config=" + cfg.StagesFile,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--cidr=10.0.1.0/24",
		"--node-ip=127.0.0.1",
	}, nil)
	return err
}

func (s *Sandbox) start(name, bin string, args, env []string) (*Process, error) {
	p, err := StartProcess(name, bin, args, env, s.WorkDir, s.LogDir)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	s.logger.Debug("started", "component", name, "pid", p.Pid(), "log", p.LogPath)
	return p, nil
}

// waitHTTP waits until GET url answers 200 with want in the body, and
// remembers the check for Restart.
func (s *Sandbox) waitHTTP(ctx context.Context, p *Process, timeout time.Duration, url string, c *http.Client, want string) error {
	rc := readyCheck{url: url, c: c, want: want}
	s.mu.Lock()
	s.ready[p.Name] = rc
	s.mu.Unlock()
	return s.waitCheck(ctx, p, timeout, rc)
}

func (s *Sandbox) waitCheck(ctx context.Context, p *Process, timeout time.Duration, rc readyCheck) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return p.WaitReady(ctx, s.logger, rc.url, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, rc.url, nil)
		if err != nil {
			return err
		}
		resp, err := rc.c.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), rc.want) {
			return fmt.Errorf("GET %s: %d %s", rc.url, resp.StatusCode, strings.TrimSpace(string(b)))
		}
		return nil
	})
}

func (s *Sandbox) adminHTTPClient() (*http.Client, error) {
	cfg := &rest.Config{
		Host: s.APIServerURL,
		TLSClientConfig: rest.TLSClientConfig{
			CAFile: s.PKI.CACert, CertFile: s.PKI.AdminCert, KeyFile: s.PKI.AdminKey,
		},
		Timeout: 2 * time.Second,
	}
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("admin client: %w", err)
	}
	s.rest = cfg
	return c, nil
}

func (s *Sandbox) writeKubeconfig() error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["sandbox"] = &clientcmdapi.Cluster{Server: s.APIServerURL, CertificateAuthority: s.PKI.CACert}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificate: s.PKI.AdminCert, ClientKey: s.PKI.AdminKey}
	kc.Contexts["sandbox"] = &clientcmdapi.Context{Cluster: "sandbox", AuthInfo: "admin"}
	kc.CurrentContext = "sandbox"
	if err := clientcmd.WriteToFile(*kc, s.KubeconfigPath); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", s.KubeconfigPath, err)
	}
	return nil
}

// RESTConfig returns a fresh admin client configuration.
func (s *Sandbox) RESTConfig() *rest.Config {
	c := rest.CopyConfig(s.rest)
	c.Timeout = 0
	c.QPS, c.Burst = 100, 200
	return c
}

func (s *Sandbox) createNode(ctx context.Context, timeout time.Duration) error {
	cs, err := kubernetes.NewForConfig(s.RESTConfig())
	if err != nil {
		return err
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        NodeName,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
			Labels: map[string]string{
				"type": "kwok", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
				"kubernetes.io/hostname": NodeName, "node-role.kubernetes.io/agent": "",
			},
		},
	}
	if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create fake node %s: %w", NodeName, err)
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// One node's informer (list, then watch), from client-go's factory.
	sel := fields.OneTermEqualSelector("metadata.name", NodeName).String()
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = sel }))
	ready := make(chan struct{})
	var once sync.Once
	seen := func(obj any) {
		if n, ok := obj.(*corev1.Node); ok && nodeReady(n) {
			once.Do(func() { close(ready) })
		}
	}
	if _, err := factory.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    seen,
		UpdateFunc: func(_, n any) { seen(n) },
	}); err != nil {
		return fmt.Errorf("watch fake node %s: %w", NodeName, err)
	}
	stop := make(chan struct{})
	factory.Start(stop)
	defer func() {
		close(stop)
		factory.Shutdown()
	}()
	select {
	case <-ready:
		return nil
	case <-wctx.Done():
	}
	if perr := s.Check(); perr != nil {
		return perr
	}
	return fmt.Errorf("fake node %s not Ready within %s (kwok log: %s/kwok.log): %w", NodeName, timeout, s.LogDir, wctx.Err())
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// Processes returns the running processes in start order.
func (s *Sandbox) Processes() []*Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Process(nil), s.procs...)
}

// Check returns an error, with log tails, for every process that died
// without Stop being asked.
func (s *Sandbox) Check() error {
	var errs []error
	for _, p := range s.Processes() {
		if err := p.Unexpected(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Restarted is what Restart did.
type Restarted struct {
	Component      string
	OldPid, NewPid int
	// Stopped is how long the old process took to exit (SIGTERM, then
	// SIGKILL after the grace); Down is from the SIGTERM until the new one
	// was ready.
	Stopped, Down time.Duration
}

// Restart stops one component (SIGTERM, a short grace, then SIGKILL) and
// starts it again with the same binary, arguments and environment — so the
// same port and, for kube-apiserver, the same etcd — and waits for it as
// Start did (etcd /health, kube-apiserver /readyz, the controller manager's
// and scheduler's /healthz; kwok has no check). The new process takes the
// old one's place, so Processes, Check and Stop see it, and the old one,
// stopped on purpose, is never reported as a death.
func (s *Sandbox) Restart(ctx context.Context, component string) (Restarted, error) {
	r := Restarted{Component: component}
	s.mu.Lock()
	var old *Process
	var names []string
	for _, p := range s.procs {
		names = append(names, p.Name)
		if p.Name == component {
			old = p
		}
	}
	rc, hasCheck := s.ready[component]
	s.mu.Unlock()
	if old == nil {
		return r, fmt.Errorf("restart %s: no such component (the sandbox runs %s)", component, strings.Join(names, ", "))
	}
	r.OldPid = old.Pid()
	t0 := time.Now()
	old.Stop(stopGrace(component))
	r.Stopped = time.Since(t0)
	p, err := old.Again()
	if err != nil {
		return r, fmt.Errorf("restart %s: %w", component, err)
	}
	r.NewPid = p.Pid()
	s.mu.Lock()
	for i := range s.procs {
		if s.procs[i] == old {
			s.procs[i] = p
		}
	}
	s.mu.Unlock()
	s.logger.Debug("restarted", "component", component, "old pid", r.OldPid, "pid", r.NewPid, "stopped in", r.Stopped.Round(time.Millisecond))
	if hasCheck {
		if err := s.waitCheck(ctx, p, s.readyTimeout, rc); err != nil {
			return r, fmt.Errorf("restart %s: %w", component, err)
		}
	}
	r.Down = time.Since(t0)
	s.logger.Info("restarted", "component", component, "pid", r.NewPid, "down", r.Down.Round(time.Millisecond))
	return r, nil
}

// stopGrace is how long a component may take to exit after SIGTERM. The API
// server gets a short one: once etcd is gone it ignores SIGTERM.
func stopGrace(component string) time.Duration {
	if component == "kube-apiserver" {
		return 5 * time.Second
	}
	return 10 * time.Second
}

// Stop stops every process in reverse start order. The API server gets a
// short grace (stopGrace) and goes before etcd.
func (s *Sandbox) Stop() {
	procs := s.Processes()
	for i := len(procs) - 1; i >= 0; i-- {
		procs[i].Stop(stopGrace(procs[i].Name))
		s.logger.Debug("stopped", "component", procs[i].Name)
	}
}
