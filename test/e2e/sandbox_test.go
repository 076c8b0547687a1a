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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
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

// The API server restarted (Sandbox.Restart) comes back on the same URL
// over the same etcd: an object written before is read back afterwards by
// a client made before, the kubeconfig unchanged, and the sandbox healthy
// (the intended stop is not a death). Negative: requests during the
// restart are refused, so the server really was down. Teardown leaves
// neither the old nor the new process.
func TestAPIServerRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sb, err := sandbox.Start(ctx, sandbox.Config{BinDir: suite.binDir, WorkDir: t.TempDir(), Logger: suite.logger.With("sandbox", "restart")})
	if err != nil {
		t.Fatalf("sandbox: %v", err)
	}
	defer sb.Stop()
	cs, err := kubernetes.NewForConfig(sb.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "survives-restart"}, Data: map[string]string{"written": time.Now().UTC().Format(time.RFC3339Nano)}}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	url, kubeconfig := sb.APIServerURL, readFile(t, sb.KubeconfigPath)

	// Poll through the restart: every answer is either the object or an error.
	stop := make(chan struct{})
	type probe struct {
		at  time.Time
		err error
	}
	probes := make(chan []probe, 1)
	go func() {
		var got []probe
		defer func() { probes <- got }()
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			pctx, pcancel := context.WithTimeout(ctx, time.Second)
			_, err := cs.CoreV1().ConfigMaps("default").Get(pctx, cm.Name, metav1.GetOptions{})
			pcancel()
			got = append(got, probe{time.Now(), err})
		}
	}()
	time.Sleep(200 * time.Millisecond)
	r, err := sb.Restart(ctx, "kube-apiserver")
	close(stop)
	seen := <-probes
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	refused, failed := 0, 0
	var firstErr error
	for _, p := range seen {
		if p.err != nil {
			failed++
			if firstErr == nil {
				firstErr = p.err
			}
			if utilnet.IsConnectionRefused(p.err) {
				refused++
			}
		}
	}
	if refused == 0 {
		t.Fatalf("no request was refused during the restart (%d probes, %d failed, first error %v): the API server was never down", len(seen), failed, firstErr)
	}

	got, err := cs.CoreV1().ConfigMaps("default").Get(ctx, cm.Name, metav1.GetOptions{})
	if err != nil || got.Data["written"] != cm.Data["written"] {
		t.Fatalf("after the restart the object written before: %v %v", err, got)
	}
	if sb.APIServerURL != url || readFile(t, sb.KubeconfigPath) != kubeconfig {
		t.Fatalf("the restart moved the API server: %s → %s, kubeconfig changed %t", url, sb.APIServerURL, readFile(t, sb.KubeconfigPath) != kubeconfig)
	}
	var apiPid int
	pids := map[int]string{r.OldPid: "old kube-apiserver"}
	for _, p := range sb.Processes() {
		pids[p.Pid()] = p.Name
		if p.Name == "kube-apiserver" {
			apiPid = p.Pid()
		}
	}
	if apiPid != r.NewPid || r.NewPid == r.OldPid {
		t.Fatalf("Processes has kube-apiserver pid %d, the restart says %d (old %d)", apiPid, r.NewPid, r.OldPid)
	}
	if alive := survivorsOf(map[int]string{r.OldPid: "old"}); len(alive) > 0 {
		t.Fatalf("the old API server still runs: %v", alive)
	}
	if err := sb.Check(); err != nil {
		t.Fatalf("after the restart: %v", err)
	}
	t.Logf("kube-apiserver pid %d → %d on %s: stopped in %s, down %s; %d probes, %d failed (%d refused, first: %v); %s read back",
		r.OldPid, r.NewPid, url, r.Stopped.Round(time.Millisecond), r.Down.Round(time.Millisecond), len(seen), failed, refused, firstErr, cm.Name)
	sb.Stop()
	if left := survivorsOf(pids); len(left) > 0 {
		t.Fatalf("left behind after Stop: %v", left)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
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
