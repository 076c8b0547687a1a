// Command sandbox brings a local Kubernetes control plane with real Flux
// controllers up and down, for people (make sandbox-up / sandbox-down).
//
//	sandbox up   [--state DIR] [--bin DIR]   start in the background, return when ready
//	sandbox down [--state DIR]               stop everything started by up
//	sandbox serve --state DIR --bin DIR      run in the foreground (what up starts)
//
// The state directory holds kubeconfig, logs/, pids and the supervisor's pid.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/homelab-ops/bootstrap/internal/sandbox"
	"github.com/homelab-ops/bootstrap/internal/sandbox/runner"
	pins "github.com/homelab-ops/bootstrap/internal/versions"
)

const usage = `usage: sandbox up|down|serve [--state DIR] [--bin DIR] [--versions FILE]`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ContinueOnError)
	state := fs.String("state", defaultState(), "state directory (kubeconfig, logs, pids)")
	bin := fs.String("bin", os.Getenv("BOOTSTRAP_SANDBOX_BIN"), "directory with the sandbox binaries (default: hack/sandbox/build.sh --print)")
	versions := fs.String("versions", "versions.env", "versions.env, for the controllers' binary versions")
	timeout := fs.Duration("timeout", 3*time.Minute, "how long up waits for readiness")
	if err := fs.Parse(os.Args[2:]); err != nil {
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "up":
		err = up(*state, *bin, *versions, *timeout)
	case "down":
		err = down(*state)
	case "serve":
		err = serve(*state, *bin, *versions)
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandbox:", err)
		os.Exit(1)
	}
}

func defaultState() string {
	if d := os.Getenv("BOOTSTRAP_SANDBOX_STATE"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "bootstrap-sandbox")
}

func resolveBin(bin string) (string, error) {
	if bin != "" {
		return filepath.Abs(bin)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return sandbox.FindBinDir(context.Background(), wd)
}

// up starts "serve" detached (own session, so it outlives this command and
// the make that ran it) and waits for its ready or error file.
func up(state, bin, versions string, timeout time.Duration) error {
	if pid, ok := readPid(filepath.Join(state, "serve.pid")); ok && alive(pid) {
		return fmt.Errorf("a sandbox is already running from %s (pid %d): run `make sandbox-down` first", state, pid)
	}
	bin, err := resolveBin(bin)
	if err != nil {
		return err
	}
	if err := sandbox.CheckBinaries(bin, append(sandbox.ControlPlaneBinaries, runner.Runnable...)...); err != nil {
		return err
	}
	if err := clearState(state); err != nil {
		return err
	}
	if err := os.MkdirAll(state, 0o755); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	versions, _ = filepath.Abs(versions)
	out, err := os.Create(filepath.Join(state, "serve.log"))
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.Command(self, "serve", "--state", state, "--bin", bin, "--versions", versions)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start sandbox supervisor: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.After(timeout)
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		if b, err := os.ReadFile(filepath.Join(state, "ready")); err == nil {
			fmt.Print(string(b))
			return nil
		}
		select {
		case err := <-done:
			return fmt.Errorf("sandbox supervisor exited (%v); its output, %s:\n%s", err, out.Name(), sandbox.TailFile(out.Name(), 30))
		case <-deadline:
			_ = syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
			return fmt.Errorf("sandbox not ready within %s; see %s and %s/logs", timeout, out.Name(), state)
		case <-t.C:
		}
	}
}

// serve runs the sandbox and the controller runner until SIGTERM/SIGINT.
func serve(state, bin, versions string) error {
	logger, closeLog, err := supervisorLog(state)
	if err != nil {
		return err
	}
	defer closeLog()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := os.WriteFile(filepath.Join(state, "serve.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return err
	}
	bin, err = resolveBin(bin)
	if err != nil {
		return err
	}
	vers, err := pins.ReadFile(versions)
	if err != nil {
		return err
	}
	sb, err := sandbox.Start(ctx, sandbox.Config{BinDir: bin, WorkDir: state, Logger: logger})
	if err != nil {
		return err
	}
	defer sb.Stop()
	r, err := runner.New(runner.Config{
		RESTConfig: sb.RESTConfig(), APIServerURL: sb.APIServerURL, CAFile: sb.PKI.CACert,
		BinDir: bin, WorkDir: filepath.Join(state, "controllers"), LogDir: sb.LogDir, Logger: logger,
		BinaryVersions: map[string]string{
			sandbox.BinSourceController:    vers["SOURCE_CONTROLLER_VERSION"],
			sandbox.BinKustomizeController: vers["KUSTOMIZE_CONTROLLER_VERSION"],
			sandbox.BinHelmController:      vers["HELM_CONTROLLER_VERSION"],
		},
	})
	if err != nil {
		return err
	}
	runDone := make(chan error, 1)
	go func() { runDone <- r.Run(ctx) }()
	var pids []string
	for _, p := range sb.Processes() {
		pids = append(pids, strconv.Itoa(p.Pid()))
	}
	_ = os.WriteFile(filepath.Join(state, "pids"), []byte(strings.Join(pids, "\n")+"\n"), 0o644)
	ready := fmt.Sprintf("sandbox up: API %s ready after %s, node ready after %s\n"+
		"  export KUBECONFIG=%s\n  logs: %s\n  Flux controllers (source, kustomize, helm) start when their Deployments exist in flux-system.\n  stop: make sandbox-down\n",
		sb.APIServerURL, sb.Timings.APIReady.Round(time.Millisecond), sb.Timings.NodeReady.Round(time.Millisecond), sb.KubeconfigPath, sb.LogDir)
	if err := os.WriteFile(filepath.Join(state, "ready"), []byte(ready), 0o644); err != nil {
		return err
	}
	logger.Info("sandbox ready; waiting for SIGTERM")
	idle(ctx, sb, logger)
	<-runDone
	logger.Info("stopping")
	return nil
}

// supervisorLog is the supervisor's own log (runner decisions: starts,
// restarts, args, reports), on stdout and beside the component logs as
// logs/runner.log.
func supervisorLog(state string) (*slog.Logger, func(), error) {
	if err := os.MkdirAll(filepath.Join(state, "logs"), 0o755); err != nil {
		return nil, nil, err
	}
	rlog, err := os.OpenFile(filepath.Join(state, "logs", "runner.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	logger := slog.New(slog.NewTextHandler(io.MultiWriter(os.Stdout, rlog), &slog.HandlerOptions{Level: slog.LevelInfo}))
	return logger, func() { _ = rlog.Close() }, nil
}

// idle waits for ctx, reporting a component that dies meanwhile (the
// sandbox keeps serving).
func idle(ctx context.Context, sb *sandbox.Sandbox, logger *slog.Logger) {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := sb.Check(); err != nil {
				logger.Error("sandbox component died", "error", err)
			}
		}
	}
}

// down signals the supervisor and waits; anything left is SIGKILLed by
// process group.
func down(state string) error {
	pid, ok := readPid(filepath.Join(state, "serve.pid"))
	if !ok {
		fmt.Printf("sandbox down: nothing running from %s\n", state)
		return nil
	}
	if alive(pid) {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		deadline := time.Now().Add(60 * time.Second)
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
	}
	var left []string
	if b, err := os.ReadFile(filepath.Join(state, "pids")); err == nil {
		for _, f := range strings.Fields(string(b)) {
			if p, err := strconv.Atoi(f); err == nil && alive(p) {
				_ = syscall.Kill(-p, syscall.SIGKILL)
				left = append(left, f)
			}
		}
	}
	if alive(pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		left = append(left, strconv.Itoa(pid))
	}
	_ = os.Remove(filepath.Join(state, "serve.pid"))
	_ = os.Remove(filepath.Join(state, "ready"))
	if len(left) > 0 {
		return fmt.Errorf("sandbox down: had to SIGKILL %s; logs kept in %s/logs", strings.Join(left, " "), state)
	}
	fmt.Printf("sandbox down: stopped (logs kept in %s/logs)\n", state)
	return nil
}

// clearState empties a previous sandbox's state dir, and refuses any other
// non-empty directory: --state must never point the RemoveAll at real data.
func clearState(state string) error {
	entries, err := os.ReadDir(state)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		if _, err := os.Stat(filepath.Join(state, "serve.log")); err != nil {
			return fmt.Errorf("--state %s is a non-empty directory that no sandbox created (no serve.log): choose an empty or new directory", state)
		}
	}
	return os.RemoveAll(state)
}

func readPid(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid, err == nil && pid > 0
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] != 'Z'
	}
	return true
}
