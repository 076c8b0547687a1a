//go:build e2e

// Package e2e proves the tool's claims against a real API server and real
// Flux controllers. TestMain starts one shared sandbox (internal/sandbox),
// with the controller runner playing kubelet for source- and
// kustomize-controller and a Git server over smart HTTP; every test that
// uses Flux there first calls ensureFlux, which brings it to the state the
// test starts from whatever ran before. A test that needs a cluster that never
// had Flux, or several clusters, starts sandboxes of its own (startEnv).
// No test depends on another having run: `-run TestX` and `-shuffle=on`
// both hold; a test whose cases follow one scenario gives each case the
// stage it starts from (stages), so `-run 'TestX/Case'` holds too. Run
// with `make e2e`.
package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"

	"github.com/homelab-ops/bootstrap/internal/sandbox"
	"github.com/homelab-ops/bootstrap/internal/sandbox/gitserver"
	"github.com/homelab-ops/bootstrap/internal/sandbox/registry"
	"github.com/homelab-ops/bootstrap/internal/sandbox/runner"
	"github.com/homelab-ops/bootstrap/internal/versions"
)

// envConfig is what every sandbox of the suite shares: the repository, the
// sandbox binaries, the pinned versions and the log.
type envConfig struct {
	root     string
	binDir   string
	versions map[string]string
	logger   *slog.Logger
}

// env is one sandbox: the control plane and clients for it, and, when
// asked for, a controller runner and a Git server. The suite's shared one
// is suite; tests that need a fresh cluster start their own with startEnv.
type env struct {
	envConfig
	name   string
	sb     *sandbox.Sandbox
	client client.WithWatch
	cs     kubernetes.Interface
	git    *gitserver.Server
	// registry serves charts (OCI and a Helm repository) over TLS, trusted
	// through the sandbox CA; set when envOptions.registry asks for it.
	registry *registry.Registry
	// runner is the current controller runner; tests may swap it
	// (the negative control runs one that ignores Deployment args, and
	// ignoreArgs says so until the next startRunner).
	runner     *runner.Runner
	ignoreArgs bool
	stopRunner func()
	// storagePort is source-controller's artifact address for every runner
	// of this sandbox: a Service address outlives its pods.
	storagePort int
	// pids of every process the sandbox started, for the leak check.
	pids map[int]string
}

// envOptions says what a sandbox gets beside the control plane.
type envOptions struct {
	runner bool // a controller runner that follows the Deployments' args
	git    bool // a Git server of its own
	// registry: a chart registry of its own (OCI and Helm repository)
	registry bool
}

var suite *env

func TestMain(m *testing.M) {
	// As the CLI does: the suite's client logs the API server's warnings
	// (an unknown field on create) through controller-runtime's logger,
	// which prints a goroutine stack when none is set.
	ctrllog.SetLogger(logr.Discard())
	os.Exit(run(m))
}

func run(m *testing.M) int {
	t0 := time.Now()
	e, err := setup()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: sandbox setup failed: %v\n", err)
		return 1
	}
	suite = e
	fmt.Fprintf(os.Stderr, "e2e: sandbox up in %s (API ready %s, node ready %s); kubeconfig %s; logs %s\n",
		time.Since(t0).Round(time.Millisecond), e.sb.Timings.APIReady.Round(time.Millisecond),
		e.sb.Timings.NodeReady.Round(time.Millisecond), e.sb.KubeconfigPath, e.sb.LogDir)
	code := m.Run()
	if err := e.sb.Check(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: a sandbox process died during the suite:\n%v\n", err)
		code = 1
	}
	e.teardown()
	if left := e.survivors(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "e2e: processes left behind after teardown: %s\n", strings.Join(left, ", "))
		code = 1
	} else {
		fmt.Fprintf(os.Stderr, "e2e: teardown complete, no sandbox process left (%d checked); suite %s\n", len(e.pids), time.Since(t0).Round(time.Second))
	}
	return code
}

// setup finds (or builds) the sandbox binaries and starts the shared sandbox.
func setup() (*env, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	cfg := envConfig{root: root, logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	ctx := context.Background()
	if cfg.binDir, err = sandbox.FindBinDir(ctx, root); err != nil {
		return nil, err
	}
	// kubectl too: the stock-path comparisons run it, and `make demo` leaves it unbuilt.
	all := append(append([]string{"kubectl"}, sandbox.ControlPlaneBinaries...), runner.Runnable...)
	if sandbox.CheckBinaries(cfg.binDir, all...) != nil {
		fmt.Fprintln(os.Stderr, "e2e: sandbox binaries missing; running hack/sandbox/build.sh (~10 min cold)")
		cmd := exec.Command("bash", filepath.Join(root, "hack", "sandbox", "build.sh"))
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("hack/sandbox/build.sh failed: %w", err)
		}
		if err := sandbox.CheckBinaries(cfg.binDir, all...); err != nil {
			return nil, err
		}
	}
	if cfg.versions, err = versions.ReadFile(filepath.Join(root, "versions.env")); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "bootstrap-e2e-")
	if err != nil {
		return nil, err
	}
	return startEnv(ctx, cfg, "suite", work, envOptions{runner: true, git: true, registry: true})
}

// startEnv starts a sandbox in work, with what o asks for; on an error it
// leaves nothing running.
func startEnv(ctx context.Context, cfg envConfig, name, work string, o envOptions) (*env, error) {
	sctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	sb, err := sandbox.Start(sctx, sandbox.Config{BinDir: cfg.binDir, WorkDir: work, Logger: cfg.logger.With("sandbox", name)})
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", name, err)
	}
	e := &env{envConfig: cfg, name: name, sb: sb, pids: map[int]string{}}
	e.track()
	if err := e.connect(o); err != nil {
		e.teardown()
		return nil, fmt.Errorf("sandbox %s: %w", name, err)
	}
	return e, nil
}

// connect makes the clients, then starts what o asks for.
func (e *env) connect(o envOptions) error {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, sourcev1.AddToScheme, kustomizev1.AddToScheme, helmv2.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	var err error
	if e.client, err = client.NewWithWatch(e.sb.RESTConfig(), client.Options{Scheme: scheme}); err != nil {
		return err
	}
	if e.cs, err = kubernetes.NewForConfig(e.sb.RESTConfig()); err != nil {
		return err
	}
	if o.git {
		if e.git, err = gitserver.Start(filepath.Join(e.sb.WorkDir, "git"), ""); err != nil {
			return err
		}
	}
	if o.registry {
		if e.registry, err = registry.Start(e.sb.PKI, filepath.Join(e.sb.WorkDir, "registry")); err != nil {
			return err
		}
	}
	if !o.runner {
		return nil
	}
	if e.storagePort, err = sandbox.FreePort(); err != nil {
		return err
	}
	return e.startRunner(false)
}

// startRunner starts a controller runner; ignoreArgs is the negative control.
func (e *env) startRunner(ignoreArgs bool) error {
	r, err := runner.New(runner.Config{
		RESTConfig: e.sb.RESTConfig(), APIServerURL: e.sb.APIServerURL, CAFile: e.sb.PKI.CACert,
		BinDir: e.binDir, WorkDir: filepath.Join(e.sb.WorkDir, "controllers"), LogDir: e.sb.LogDir,
		BinaryVersions: map[string]string{
			sandbox.BinSourceController:    e.versions["SOURCE_CONTROLLER_VERSION"],
			sandbox.BinKustomizeController: e.versions["KUSTOMIZE_CONTROLLER_VERSION"],
			sandbox.BinHelmController:      e.versions["HELM_CONTROLLER_VERSION"],
		},
		StoragePort:          e.storagePort,
		IgnoreDeploymentArgs: ignoreArgs,
		Logger:               e.logger.With("sandbox", e.name, "runner", map[bool]string{false: "normal", true: "IGNORE-ARGS"}[ignoreArgs]),
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = r.Run(ctx)
	}()
	e.runner, e.ignoreArgs = r, ignoreArgs
	e.stopRunner = func() {
		e.trackRunner()
		cancel()
		<-done
		e.runner, e.stopRunner = nil, nil
	}
	return nil
}

// track records the pids of sandbox processes for the leak check.
func (e *env) track() {
	for _, p := range e.sb.Processes() {
		e.pids[p.Pid()] = p.Name
	}
}

func (e *env) trackRunner() {
	if e.runner == nil {
		return
	}
	for n, in := range e.runner.Status().Instances {
		if in.Pid > 0 {
			e.pids[in.Pid] = n
		}
	}
}

// teardown stops the runner, the Git server and the sandbox; a second call
// does nothing.
func (e *env) teardown() {
	if e.stopRunner != nil {
		e.stopRunner()
	}
	if e.git != nil {
		_ = e.git.Close()
		e.git = nil
	}
	if e.registry != nil {
		_ = e.registry.Close()
		e.registry = nil
	}
	if e.sb != nil {
		e.track()
		e.sb.Stop()
		e.sb = nil
	}
}

// survivors lists tracked processes (or members of their process groups)
// still alive.
func (e *env) survivors() []string {
	return survivorsOf(e.pids)
}

func survivorsOf(pids map[int]string) []string {
	var left []string
	for pid, name := range pids {
		if processAlive(pid) || groupAlive(pid) {
			left = append(left, fmt.Sprintf("%s (pid %d)", name, pid))
		}
	}
	return left
}

func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// groupAlive reports whether any live process is in process group pgid.
func groupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); err != nil {
		return false
	}
	entries, _ := os.ReadDir("/proc")
	for _, d := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 3 && f[0] != "Z" && f[3] == fmt.Sprint(pgid) {
			return true
		}
	}
	return false
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "versions.env")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no versions.env above %s: run the e2e tests from the repository", dir)
		}
	}
}
