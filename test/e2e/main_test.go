//go:build e2e

// Package e2e proves the tool's claims against a real API server and real
// Flux controllers: one sandbox (internal/sandbox) for the whole suite, the
// controller runner playing kubelet for source- and kustomize-controller,
// and a Git server over smart HTTP. Run with `make e2e`.
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

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"

	"github.com/homelab-ops/bootstrap/internal/sandbox"
	"github.com/homelab-ops/bootstrap/internal/sandbox/gitserver"
	"github.com/homelab-ops/bootstrap/internal/sandbox/runner"
	"github.com/homelab-ops/bootstrap/internal/versions"
)

// env is the suite's shared sandbox; set once by TestMain, read by tests.
type env struct {
	root     string
	binDir   string
	versions map[string]string
	logger   *slog.Logger
	sb       *sandbox.Sandbox
	client   client.WithWatch
	cs       kubernetes.Interface
	git      *gitserver.Server
	// runner is the current controller runner; tests may swap it
	// (the negative control runs one that ignores Deployment args).
	runner     *runner.Runner
	stopRunner func()
	// storagePort is source-controller's artifact address for every runner
	// of the suite: a Service address outlives its pods.
	storagePort int
	// pids of every process the suite started, for the leak check.
	pids map[int]string
}

var suite *env

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	t0 := time.Now()
	e, err := setup()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: sandbox setup failed: %v\n", err)
		if e != nil {
			e.teardown()
		}
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

func setup() (*env, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	e := &env{root: root, pids: map[int]string{}}
	level := slog.LevelInfo
	e.logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctx := context.Background()
	if e.binDir, err = sandbox.FindBinDir(ctx, root); err != nil {
		return nil, err
	}
	all := append(append([]string{}, sandbox.ControlPlaneBinaries...), runner.Runnable...)
	if sandbox.CheckBinaries(e.binDir, all...) != nil {
		fmt.Fprintln(os.Stderr, "e2e: sandbox binaries missing; running hack/sandbox/build.sh (~10 min cold)")
		cmd := exec.Command("bash", filepath.Join(root, "hack", "sandbox", "build.sh"))
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("hack/sandbox/build.sh failed: %w", err)
		}
		if err := sandbox.CheckBinaries(e.binDir, all...); err != nil {
			return nil, err
		}
	}
	if e.versions, err = versions.ReadFile(filepath.Join(root, "versions.env")); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "bootstrap-e2e-")
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	sb, err := sandbox.Start(sctx, sandbox.Config{BinDir: e.binDir, WorkDir: work, Logger: e.logger})
	if err != nil {
		return nil, err
	}
	e.sb = sb
	e.track()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, sourcev1.AddToScheme, kustomizev1.AddToScheme} {
		if err := add(scheme); err != nil {
			return e, err
		}
	}
	if e.client, err = client.NewWithWatch(sb.RESTConfig(), client.Options{Scheme: scheme}); err != nil {
		return e, err
	}
	if e.cs, err = kubernetes.NewForConfig(sb.RESTConfig()); err != nil {
		return e, err
	}
	if e.storagePort, err = sandbox.FreePort(); err != nil {
		return e, err
	}
	if e.git, err = gitserver.Start(filepath.Join(work, "git"), ""); err != nil {
		return e, err
	}
	if err := e.startRunner(false); err != nil {
		return e, err
	}
	return e, nil
}

// startRunner starts a controller runner; ignoreArgs is the negative control.
func (e *env) startRunner(ignoreArgs bool) error {
	r, err := runner.New(runner.Config{
		RESTConfig: e.sb.RESTConfig(), APIServerURL: e.sb.APIServerURL, CAFile: e.sb.PKI.CACert,
		BinDir: e.binDir, WorkDir: filepath.Join(e.sb.WorkDir, "controllers"), LogDir: e.sb.LogDir,
		BinaryVersions: map[string]string{
			sandbox.BinSourceController:    e.versions["SOURCE_CONTROLLER_VERSION"],
			sandbox.BinKustomizeController: e.versions["KUSTOMIZE_CONTROLLER_VERSION"],
		},
		StoragePort:          e.storagePort,
		IgnoreDeploymentArgs: ignoreArgs,
		Logger:               e.logger.With("runner", map[bool]string{false: "normal", true: "IGNORE-ARGS"}[ignoreArgs]),
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
	e.runner = r
	e.stopRunner = func() {
		e.trackRunner()
		cancel()
		<-done
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

func (e *env) teardown() {
	if e.stopRunner != nil {
		e.stopRunner()
	}
	if e.git != nil {
		_ = e.git.Close()
	}
	if e.sb != nil {
		e.track()
		e.sb.Stop()
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
