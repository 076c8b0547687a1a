//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/homelab-ops/bootstrap/internal/sandbox"
)

// A second sandbox runs beside the suite's (free ports: no collision), is
// torn down, and leaves no process behind. Negative: while it runs, its
// processes are seen alive, so the leak check can see a leak.
func TestTeardownLeavesNoProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sb, err := sandbox.Start(ctx, sandbox.Config{BinDir: suite.binDir, WorkDir: t.TempDir(), Logger: suite.logger.With("sandbox", "second")})
	if err != nil {
		t.Fatalf("second sandbox beside the suite's: %v", err)
	}
	if sb.APIServerURL == suite.sb.APIServerURL {
		sb.Stop()
		t.Fatalf("two sandboxes share %s", sb.APIServerURL)
	}
	pids := map[int]string{}
	for _, p := range sb.Processes() {
		pids[p.Pid()] = p.Name
	}
	if len(pids) != len(sandbox.ControlPlaneBinaries) {
		t.Errorf("want %d processes, have %v", len(sandbox.ControlPlaneBinaries), pids)
	}
	if alive := survivorsOf(pids); len(alive) != len(pids) {
		t.Fatalf("leak check blind: only %v of %v seen alive while running", alive, pids)
	}
	t0 := time.Now()
	sb.Stop()
	if left := survivorsOf(pids); len(left) > 0 {
		t.Fatalf("left behind after Stop: %v", left)
	}
	t.Logf("second sandbox: API ready %s, node ready %s, teardown %s, nothing left of %d processes",
		sb.Timings.APIReady.Round(time.Millisecond), sb.Timings.NodeReady.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond), len(pids))
}

// A port already taken — here by the suite's own API server — is refused
// up front with the port and the fix, and nothing is started.
func TestPortTaken(t *testing.T) {
	port := strings.TrimPrefix(suite.sb.APIServerURL, "https://127.0.0.1:")
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	_, err = sandbox.Start(context.Background(), sandbox.Config{BinDir: suite.binDir, WorkDir: work, APIServerPort: p})
	if err == nil || !strings.Contains(err.Error(), "already in use") || !strings.Contains(err.Error(), port) {
		t.Fatalf("taken port %s: want a clear 'already in use' error, got %v", port, err)
	}
	if _, statErr := os.Stat(filepath.Join(work, "logs")); statErr == nil {
		t.Fatalf("processes were started despite the taken port")
	}
	t.Logf("%v", err)
}

// A missing binary is named, with the command that builds it.
func TestBinaryMissing(t *testing.T) {
	bin := t.TempDir()
	for _, n := range []string{sandbox.BinEtcd, sandbox.BinControllerManager, sandbox.BinScheduler, sandbox.BinKwok} {
		if err := os.Symlink(filepath.Join(suite.binDir, n), filepath.Join(bin, n)); err != nil {
			t.Fatal(err)
		}
	}
	_, err := sandbox.Start(context.Background(), sandbox.Config{BinDir: bin, WorkDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "kube-apiserver") || !strings.Contains(err.Error(), "make sandbox-build") {
		t.Fatalf("missing kube-apiserver: want it named with the fix, got %v", err)
	}
	for _, present := range []string{"etcd,", "kwok"} {
		if strings.Contains(err.Error(), present) {
			t.Errorf("present binary %q reported missing: %v", present, err)
		}
	}
	t.Logf("%v", err)
}

// The command for people: `sandbox up` returns with a working kubeconfig and
// a sandbox that outlives it; `sandbox down` leaves nothing behind. Negative:
// a second `up` on the same state is refused while the first runs.
func TestSandboxCommandUpDown(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "sandbox")
	build := exec.Command("go", "build", "-o", bin, "./cmd/sandbox")
	build.Dir = suite.root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/sandbox: %v\n%s", err, out)
	}
	state := filepath.Join(t.TempDir(), "state")
	run := func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = suite.root
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("up", "--state", state, "--bin", suite.binDir)
	if err != nil {
		t.Fatalf("sandbox up: %v\n%s", err, out)
	}
	pids := map[int]string{}
	defer func() {
		if left := survivorsOf(pids); len(left) > 0 {
			for pid := range pids {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
			}
		}
	}()
	b, _ := os.ReadFile(filepath.Join(state, "serve.pid"))
	if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
		pids[pid] = "sandbox serve"
	}
	b, _ = os.ReadFile(filepath.Join(state, "pids"))
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids[pid] = "component"
		}
	}
	if len(pids) != 1+len(sandbox.ControlPlaneBinaries) {
		t.Fatalf("state records %d processes, want %d: %v", len(pids), 1+len(sandbox.ControlPlaneBinaries), pids)
	}
	if !strings.Contains(out, "export KUBECONFIG="+filepath.Join(state, "kubeconfig")) {
		t.Fatalf("up did not print the kubeconfig: %s", out)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(state, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	node, err := cs.CoreV1().Nodes().Get(ctx, sandbox.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the kubeconfig from `sandbox up` does not reach its cluster: %v", err)
	}
	t.Logf("sandbox up: %s; node %s", firstLine(out), node.Name)
	if out, err := run("up", "--state", state, "--bin", suite.binDir); err == nil || !strings.Contains(out, "already running") {
		t.Fatalf("second up on a running state: err=%v\n%s", err, out)
	}
	if out, err := run("down", "--state", state); err != nil {
		t.Fatalf("sandbox down: %v\n%s", err, out)
	}
	if left := survivorsOf(pids); len(left) > 0 {
		t.Fatalf("left behind after `sandbox down`: %v", left)
	}
}
