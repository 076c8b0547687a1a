package cutover

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// holdEnv makes the test binary a stand-in serving process: it holds the
// lock of the state directory named by the variable until killed.
const holdEnv = "BOOTSTRAP_CUTOVER_TEST_HOLD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(holdEnv); dir != "" {
		f, err := os.OpenFile(filepath.Join(dir, "serve.lock"), os.O_CREATE|os.O_RDWR, 0o600)
		if err == nil {
			err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		}
		if err != nil {
			os.Exit(2)
		}
		os.Stdout.WriteString("holding\n")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startProcess starts the test binary; with dir it holds dir's lock.
func startProcess(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holdEnv+"="+dir)
	if dir == "" {
		cmd = exec.Command("sleep", "60")
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if dir != "" {
		if line, _ := bufio.NewReader(out).ReadString('\n'); line != "holding\n" {
			t.Fatalf("the stand-in serving process did not take the lock: %q", line)
		}
	}
	return cmd
}

func writeServeState(t *testing.T, dir string, pid int) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"pid": pid, "log": filepath.Join(dir, "serve.log")})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "state.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestServeStopped: cutover.serve-stopped passes when no serving process
// is left, warns when it had to stop one that did not stop by itself, and
// fails when the process holding the source cannot be stopped (here: the
// state names another pid than the lock's holder).
func TestServeStopped(t *testing.T) {
	run := &pipeline.Run{Report: verify.NewReport("cutover"), Progress: func(string) {}}
	check := func(dir string) verify.Check {
		return serveStopped(dir, run, 300*time.Millisecond, 300*time.Millisecond)
	}

	if c := check(t.TempDir()); c.Verdict != verify.Pass {
		t.Fatalf("nothing serving: %s %q, want pass", c.Verdict, c.Message)
	}

	dir := t.TempDir()
	holder := startProcess(t, dir)
	writeServeState(t, dir, holder.Process.Pid)
	if c := check(dir); c.Verdict != verify.Warn || !strings.Contains(c.Message, "did not stop by itself") {
		t.Fatalf("a server that does not stop by itself: %s %q, want warn", c.Verdict, c.Message)
	}

	dir = t.TempDir()
	startProcess(t, dir)
	other := startProcess(t, "")
	writeServeState(t, dir, other.Process.Pid)
	if c := check(dir); c.Verdict != verify.Fail || !strings.Contains(c.Message, "did not stop") {
		t.Fatalf("a server that cannot be stopped: %s %q, want fail", c.Verdict, c.Message)
	}
}
