package sandbox

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Restart replaces the component in place: same command line (one more
// header in the same log), a new pid, the old one gone and not reported as
// a death, the others untouched; its ready check runs again. Negative: an
// unknown component is refused, naming what runs.
func TestRestartReplacesInPlace(t *testing.T) {
	dir := t.TempDir()
	s := &Sandbox{WorkDir: dir, LogDir: dir, logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		readyTimeout: 5 * time.Second, ready: map[string]readyCheck{}}
	defer s.Stop()
	a, err := s.start("a", "/bin/sleep", []string{"30"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.start("b", "/bin/sleep", []string{"31"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var checks atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		checks.Add(1)
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	if err := s.waitHTTP(context.Background(), b, time.Second, srv.URL, srv.Client(), "ok"); err != nil {
		t.Fatal(err)
	}

	r, err := s.Restart(context.Background(), "b")
	if err != nil {
		t.Fatal(err)
	}
	procs := s.Processes()
	if len(procs) != 2 || procs[0] != a || procs[1] == b || procs[1].Pid() != r.NewPid || r.OldPid != b.Pid() || r.NewPid == r.OldPid {
		t.Fatalf("not replaced in place: %+v, processes %v %v", r, procs[0].Pid(), procs[1].Pid())
	}
	if exited, _ := b.Exited(); !exited || syscall.Kill(r.OldPid, 0) == nil {
		t.Fatalf("old b (pid %d) still runs", r.OldPid)
	}
	if exited, _ := a.Exited(); exited {
		t.Fatal("a was stopped by b's restart")
	}
	if err := s.Check(); err != nil {
		t.Fatalf("the intended stop reported as a death: %v", err)
	}
	if n := checks.Load(); n != 2 {
		t.Fatalf("ready check ran %d times, want once at start and once after the restart", n)
	}
	log, _ := os.ReadFile(procs[1].LogPath)
	if n := strings.Count(string(log), "/bin/sleep 31\n"); n != 2 {
		t.Fatalf("want the same command line twice in %s, got %d:\n%s", procs[1].LogPath, n, log)
	}
	if r.Down < r.Stopped || r.Down <= 0 {
		t.Fatalf("durations: %+v", r)
	}

	// A death after the restart is still a death.
	_ = syscall.Kill(r.NewPid, syscall.SIGKILL)
	<-procs[1].Done()
	if err := s.Check(); err == nil || !strings.Contains(err.Error(), "b (pid") {
		t.Fatalf("the restarted process's death not reported: %v", err)
	}

	if _, err := s.Restart(context.Background(), "c"); err == nil || !strings.Contains(err.Error(), "a, b") {
		t.Fatalf("unknown component: %v", err)
	}
}
