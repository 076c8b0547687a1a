package serve

import (
	"context"
	"errors"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childEnv makes this test binary the serving process (`serve run`), so
// Start, Stop and the lock are tested on real processes.
const childEnv = "BOOTSTRAP_SERVE_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		ln, err := net.FileListener(os.NewFile(3, "listener"))
		if err != nil {
			os.Exit(2)
		}
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		err = Run(ctx, os.Args[len(os.Args)-1], os.Stdin, ln, os.Stderr)
		stop()
		if err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func startChild(t *testing.T, root string, serveFor time.Duration) *Prepared {
	t.Helper()
	p, err := Prepare(context.Background(), Options{
		Addr: "127.0.0.1", For: serveFor, Repo: checkout(t), Ref: mainRef, Namespace: "flux-system", Name: "flux-system",
		// No API server answers: the process serves until stopped or --serve-for.
		APIServer: "https://127.0.0.1:1", Kube: Kube{Host: "https://127.0.0.1:1"}, Dirs: Dirs{Root: root},
		Command: []string{os.Args[0], "-test.run=^$"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	if _, err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return p
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func TestProcessLifecycle(t *testing.T) {
	needGit(t)
	t.Setenv(childEnv, "1")
	root := t.TempDir()
	first := startChild(t, root, time.Hour)
	dir := first.Dir
	if running, _ := Running(dir); !running {
		t.Fatal("not running after Start")
	}
	st, err := ReadState(dir)
	if err != nil || st == nil || st.PID != first.Started.PID || st.Revision != first.Snapshot.Revision() {
		t.Fatalf("state %+v %v", st, err)
	}
	// A second server for the same cluster replaces the first.
	second := startChild(t, root, time.Hour)
	if second.Dir != dir || second.Started.PID == first.Started.PID {
		t.Fatalf("second server: dir %s pid %d (first %d)", second.Dir, second.Started.PID, first.Started.PID)
	}
	// The first one is gone (reaped by Start's Wait a moment after it let go).
	for deadline := time.Now().Add(5 * time.Second); alive(first.Started.PID); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the replaced server %d still runs", first.Started.PID)
		}
	}
	if _, err := os.Stat(filepath.Dir(first.Snapshot.Bare)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the replaced server's snapshot is left: %v", err)
	}
	stopped, err := Stop(dir, 5*time.Second)
	if err != nil || stopped == nil || stopped.PID != second.Started.PID {
		t.Fatalf("stop: %+v %v", stopped, err)
	}
	if running, _ := Running(dir); running {
		t.Fatal("still running after Stop")
	}
	if st, _ := ReadState(dir); st != nil {
		t.Fatalf("state left after Stop: %+v", st)
	}
	if again, err := Stop(dir, time.Second); again != nil || err != nil {
		t.Fatalf("a second stop: %+v %v", again, err)
	}
}

func TestServeForEnds(t *testing.T) {
	needGit(t)
	t.Setenv(childEnv, "1")
	p := startChild(t, t.TempDir(), 2*time.Second)
	if !WaitStopped(p.Dir, 20*time.Second) {
		t.Fatalf("the server did not stop by itself after --serve-for")
	}
	b, _ := os.ReadFile(filepath.Join(p.Dir, logFile))
	if !strings.Contains(string(b), "--serve-for ended") {
		t.Fatalf("log: %s", b)
	}
}
