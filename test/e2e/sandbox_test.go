//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/homelab-ops/bootstrap/pkg/sandbox"
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
