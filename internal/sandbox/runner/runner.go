package runner

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/workqueue"

	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/internal/sandbox"
)

// Config configures a Runner.
type Config struct {
	// RESTConfig is an admin client: it watches Deployments and requests
	// service-account tokens for the controllers.
	RESTConfig *rest.Config
	// APIServerURL and CAFile go into each controller's kubeconfig.
	APIServerURL, CAFile string
	// BinDir holds source-controller, kustomize-controller and helm-controller.
	BinDir string
	// BinaryVersions maps controller name to the version its binary was built from.
	BinaryVersions map[string]string
	// WorkDir receives one scratch directory per controller start.
	WorkDir string
	// LogDir receives <controller>.log (appended across restarts).
	LogDir string
	// StoragePort is source-controller's artifact address, stable across
	// restarts as its Service is in a cluster: artifact URLs in GitRepository
	// status must outlive the process. 0 picks a free port in New; runners
	// that replace each other should share one.
	StoragePort int
	// Namespace to watch; default flux-system.
	Namespace string
	// IgnoreDeploymentArgs is a negative control: run the binaries without
	// the Deployment's args. Never set it otherwise.
	IgnoreDeploymentArgs bool
	// Logger; default discards.
	Logger *slog.Logger
}

// Runnable lists the controllers the sandbox has binaries for.
var Runnable = []string{sandbox.BinSourceController, sandbox.BinKustomizeController, sandbox.BinHelmController}

// Instance is a running (or last-run) controller.
type Instance struct {
	Controller   string
	Pid          int
	Args         []string
	Env          []string
	TemplateHash string
	ImageVersion string
	Notes        []string
	// Starts counts starts since the runner began (restarts = Starts-1).
	Starts int
	// LastExit describes the last unexpected exit, with log tail.
	LastExit string
	LogPath  string
	// MetricsAddr serves the controller's Prometheus metrics.
	MetricsAddr string
	Running     bool
	// Ready: the process answers /readyz on its health address, as the
	// Deployment's readiness probe would see it.
	Ready bool
}

// Report is a controller Deployment the runner cannot run, and why.
type Report struct {
	Deployment string
	Reason     string
}

// Status is a snapshot of the runner.
type Status struct {
	Instances   map[string]Instance
	Unsupported []Report
}

// Runner runs Flux controllers for their Deployments. Create with New,
// drive with Run.
type Runner struct {
	cfg    Config
	logger *slog.Logger
	cs     kubernetes.Interface
	queue  workqueue.TypedRateLimitingInterface[string]
	lister func(name string) (*appsv1.Deployment, error)

	mu          sync.Mutex
	procs       map[string]*running
	unsupported map[string]string
	starts      map[string]int
	crashes     map[string]int // consecutive quick deaths, for back-off
	lastExit    map[string]string
	changed     chan struct{}
}

type running struct {
	proc    *sandbox.Process
	plan    *Plan
	started time.Time
	ready   bool
}

// New validates cfg and returns a Runner.
func New(cfg Config) (*Runner, error) {
	if cfg.RESTConfig == nil || cfg.BinDir == "" || cfg.WorkDir == "" {
		return nil, fmt.Errorf("runner: RESTConfig, BinDir and WorkDir are required")
	}
	if cfg.Namespace == "" {
		cfg.Namespace = fluxobj.DefaultNamespace
	}
	if cfg.LogDir == "" {
		cfg.LogDir = filepath.Join(cfg.WorkDir, "logs")
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.StoragePort == 0 {
		p, err := sandbox.FreePort()
		if err != nil {
			return nil, err
		}
		cfg.StoragePort = p
	}
	cs, err := kubernetes.NewForConfig(cfg.RESTConfig)
	if err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	return &Runner{
		cfg: cfg, logger: logger, cs: cs,
		procs:       map[string]*running{},
		unsupported: map[string]string{},
		starts:      map[string]int{},
		crashes:     map[string]int{},
		lastExit:    map[string]string{},
		changed:     make(chan struct{}),
	}, nil
}

// Run watches Deployments until ctx ends, then stops every controller it
// started. It returns ctx's error or a setup failure.
func (r *Runner) Run(ctx context.Context) error {
	f := informers.NewSharedInformerFactoryWithOptions(r.cs, 10*time.Minute, informers.WithNamespace(r.cfg.Namespace))
	inf := f.Apps().V1().Deployments()
	r.queue = workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](500*time.Millisecond, 10*time.Second))
	enqueue := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if dep, ok := obj.(*appsv1.Deployment); ok {
			r.queue.Add(dep.Name)
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, n any) { enqueue(n) },
		DeleteFunc: enqueue,
	}); err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	lister := inf.Lister()
	r.lister = func(name string) (*appsv1.Deployment, error) {
		return lister.Deployments(r.cfg.Namespace).Get(name)
	}
	f.Start(ctx.Done())
	defer f.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), inf.Informer().HasSynced) {
		r.stopAll()
		return ctx.Err()
	}
	go func() {
		<-ctx.Done()
		r.queue.ShutDown()
	}()
	for r.processNext(ctx) {
	}
	r.stopAll()
	return ctx.Err()
}

func (r *Runner) processNext(ctx context.Context) bool {
	name, shutdown := r.queue.Get()
	if shutdown {
		return false
	}
	defer r.queue.Done(name)
	if err := r.sync(ctx, name); err != nil {
		if ctx.Err() != nil {
			return false
		}
		r.logger.Error("controller start failed; retrying", "deployment", name, "error", err)
		r.setLastExit(name, err.Error())
		r.queue.AddRateLimited(name)
		return true
	}
	r.queue.Forget(name)
	return true
}

func (r *Runner) sync(ctx context.Context, name string) error {
	dep, err := r.lister(name)
	if apierrors.IsNotFound(err) {
		r.stop(name)
		r.mu.Lock()
		delete(r.unsupported, name)
		r.mu.Unlock()
		r.notify()
		return nil
	}
	if err != nil {
		return err
	}
	if !r.runnable(name) {
		r.mu.Lock()
		_, known := r.unsupported[name]
		reason := "no local binary for this controller: its Deployment gets kwok pods only, nothing reconciles its APIs"
		r.unsupported[name] = reason
		r.mu.Unlock()
		if !known {
			r.logger.Warn("cannot run controller", "deployment", name, "reason", reason)
			r.notify()
		}
		return nil
	}
	if dep.Spec.Replicas != nil && *dep.Spec.Replicas == 0 {
		r.stop(name) // scaled to zero: no pod, no process
		return nil
	}
	hash := TemplateHash(&dep.Spec.Template)
	r.mu.Lock()
	cur := r.procs[name]
	r.mu.Unlock()
	if cur != nil {
		if exited, _ := cur.proc.Exited(); !exited && cur.plan.TemplateHash == hash {
			return nil
		}
		r.logger.Info("pod template changed; restarting", "controller", name, "from", cur.plan.TemplateHash, "to", hash)
		r.stop(name)
	}
	return r.start(ctx, dep)
}

func (r *Runner) runnable(name string) bool {
	for _, n := range Runnable {
		if n == name {
			return true
		}
	}
	return false
}

func (r *Runner) start(ctx context.Context, dep *appsv1.Deployment) error {
	name := dep.Name
	r.mu.Lock()
	r.starts[name]++
	r.mu.Unlock()
	// One directory per pod template: a crash restart keeps its emptyDir
	// volumes (same pod), a template change gets fresh ones (new pod).
	dir := filepath.Join(r.cfg.WorkDir, name, TemplateHash(&dep.Spec.Template))
	for _, d := range []string{"home", "tmp", "storage"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	kc, err := r.kubeconfigFor(ctx, dep, dir)
	if err != nil {
		return err
	}
	var ports [2]int
	for i := range ports {
		// Each pick closes its probe: the second must not repeat the first.
		for ports[i] == 0 || (i == 1 && ports[1] == ports[0]) {
			if ports[i], err = sandbox.FreePort(); err != nil {
				return err
			}
		}
	}
	plan, err := BuildPlan(dep, PlanInput{
		Controller: name, Binary: filepath.Join(r.cfg.BinDir, name), BinaryVersion: r.cfg.BinaryVersions[name],
		Dir: dir, Kubeconfig: kc, MetricsPort: ports[0], HealthPort: ports[1], StoragePort: r.cfg.StoragePort,
		IgnoreDeploymentArgs: r.cfg.IgnoreDeploymentArgs,
	})
	if err != nil {
		return err
	}
	for _, note := range plan.Notes {
		r.logger.Warn(note, "controller", name)
	}
	for _, mp := range volumePaths(mustContainer(dep), dir) {
		if err := os.MkdirAll(mp, 0o755); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	if err := sandbox.CheckBinaries(r.cfg.BinDir, name); err != nil {
		return err
	}
	p, err := sandbox.StartProcess(name, plan.Binary, plan.Args, plan.Env, dir, r.cfg.LogDir)
	if err != nil {
		return err
	}
	r.logger.Info("controller started", "controller", name, "pid", p.Pid(), "template", plan.TemplateHash, "args", plan.Args)
	r.mu.Lock()
	r.procs[name] = &running{proc: p, plan: plan, started: time.Now()}
	r.mu.Unlock()
	r.notify()
	go r.watchExit(name, p, time.Now())
	go r.probe(name, p, plan.HealthAddr)
	return nil
}

// watchExit reports a controller that died on its own, with its log tail,
// and restarts it with a back-off like kubelet's CrashLoopBackOff.
func (r *Runner) watchExit(name string, p *sandbox.Process, started time.Time) {
	<-p.Done()
	err := p.Unexpected()
	if err == nil {
		return
	}
	r.mu.Lock()
	if time.Since(started) > time.Minute {
		r.crashes[name] = 0
	}
	r.crashes[name]++
	delay := time.Second << min(r.crashes[name]-1, 5) // 1s … 32s
	r.mu.Unlock()
	r.logger.Error("controller exited unexpectedly; restarting", "controller", name, "pid", p.Pid(),
		"after", time.Since(started).Round(time.Millisecond), "restartIn", delay, "log", p.LogPath, "tail", p.Tail(5))
	msg := err.Error()
	if m := noKindRe.FindStringSubmatch(msg); m != nil {
		msg = fmt.Sprintf("the installed CRDs do not serve %s %s, which the %s %s binary needs (an older Flux install?): %s",
			m[2], m[1], name, r.cfg.BinaryVersions[name], msg)
	}
	r.setLastExit(name, msg)
	if r.queue != nil && !r.queue.ShuttingDown() {
		r.queue.AddAfter(name, delay)
	}
}

// probe is the readiness probe: GET /readyz until it answers 200 or the
// process exits. Polling is what a probe is.
func (r *Runner) probe(name string, p *sandbox.Process, addr string) {
	c := &http.Client{Timeout: time.Second}
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.Done():
			return
		case <-t.C:
		}
		resp, err := c.Get("http://" + addr + "/readyz")
		if err != nil {
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			continue
		}
		r.mu.Lock()
		if cur := r.procs[name]; cur != nil && cur.proc == p {
			cur.ready = true
		}
		r.mu.Unlock()
		r.logger.Info("controller ready", "controller", name, "pid", p.Pid())
		r.notify()
		return
	}
}

// noKindRe matches controller-runtime's error for a kind the API server
// does not serve, as it appears (JSON-escaped) in a controller's log.
var noKindRe = regexp.MustCompile(`no matches for kind \\?"([A-Za-z]+)\\?" in version \\?"([a-z0-9./-]+)\\?"`)

func (r *Runner) setLastExit(name, msg string) {
	r.mu.Lock()
	r.lastExit[name] = msg
	r.mu.Unlock()
	r.notify()
}

func mustContainer(dep *appsv1.Deployment) *corev1.Container {
	c, _ := ManagerContainer(dep)
	return c
}

// kubeconfigFor writes a kubeconfig that authenticates as the Deployment's
// service account, so the controller runs with the RBAC its install grants.
func (r *Runner) kubeconfigFor(ctx context.Context, dep *appsv1.Deployment, dir string) (string, error) {
	sa := dep.Spec.Template.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	exp := int64(24 * 3600)
	tr, err := r.cs.CoreV1().ServiceAccounts(dep.Namespace).CreateToken(ctx, sa, &authv1.TokenRequest{
		Spec: authv1.TokenRequestSpec{ExpirationSeconds: &exp},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("%s: token for service account %s/%s: %w", dep.Name, dep.Namespace, sa, err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["sandbox"] = &clientcmdapi.Cluster{Server: r.cfg.APIServerURL, CertificateAuthority: r.cfg.CAFile}
	kc.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["sandbox"] = &clientcmdapi.Context{Cluster: "sandbox", AuthInfo: sa, Namespace: dep.Namespace}
	kc.CurrentContext = "sandbox"
	path := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return "", fmt.Errorf("%s: write kubeconfig: %w", dep.Name, err)
	}
	return path, nil
}

func (r *Runner) stop(name string) {
	r.mu.Lock()
	cur := r.procs[name]
	delete(r.procs, name)
	r.mu.Unlock()
	if cur == nil {
		return
	}
	cur.proc.Stop(15 * time.Second)
	r.logger.Info("controller stopped", "controller", name, "pid", cur.proc.Pid())
	r.notify()
}

func (r *Runner) stopAll() {
	r.mu.Lock()
	names := make([]string, 0, len(r.procs))
	for n := range r.procs {
		names = append(names, n)
	}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Add(1)
		go func() { defer wg.Done(); r.stop(n) }()
	}
	wg.Wait()
}

func (r *Runner) notify() {
	r.mu.Lock()
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

// Status returns a snapshot.
func (r *Runner) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := Status{Instances: map[string]Instance{}}
	for name, n := range r.starts {
		in := Instance{Controller: name, Starts: n, LastExit: r.lastExit[name]}
		if cur := r.procs[name]; cur != nil {
			exited, _ := cur.proc.Exited()
			in.Running = !exited
			in.Ready = in.Running && cur.ready
			in.Pid = cur.proc.Pid()
			in.Args = cur.plan.Args
			in.Env = cur.plan.Env
			in.TemplateHash = cur.plan.TemplateHash
			in.ImageVersion = cur.plan.ImageVersion
			in.Notes = cur.plan.Notes
			in.LogPath = cur.proc.LogPath
			in.MetricsAddr = cur.plan.MetricsAddr
		}
		st.Instances[name] = in
	}
	for d, reason := range r.unsupported {
		st.Unsupported = append(st.Unsupported, Report{Deployment: d, Reason: reason})
	}
	sort.Slice(st.Unsupported, func(i, j int) bool { return st.Unsupported[i].Deployment < st.Unsupported[j].Deployment })
	return st
}

// Unsupported returns the controller Deployments the runner cannot run.
func (r *Runner) Unsupported() []Report { return r.Status().Unsupported }

// WaitFor blocks until cond(Status) is true or ctx ends. It is woken by
// every state change, not by polling.
func (r *Runner) WaitFor(ctx context.Context, cond func(Status) bool) error {
	for {
		r.mu.Lock()
		ch := r.changed
		r.mu.Unlock()
		st := r.Status()
		if cond(st) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("runner: condition not met: %w; status: %+v", ctx.Err(), summarize(st))
		case <-ch:
		}
	}
}

func summarize(st Status) map[string]string {
	m := map[string]string{}
	for n, in := range st.Instances {
		m[n] = fmt.Sprintf("running=%v ready=%v starts=%d template=%s lastExit=%q", in.Running, in.Ready, in.Starts, in.TemplateHash, in.LastExit)
	}
	for _, u := range st.Unsupported {
		m[u.Deployment] = "unsupported"
	}
	return m
}
