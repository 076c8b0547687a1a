package sandbox

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestUnexpectedExitReportsLogTail(t *testing.T) {
	p, err := StartProcess("dier", "/bin/sh", []string{"-c", "echo first; echo 'fatal: disk on fire' >&2; exit 3"}, nil, t.TempDir(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	err = p.Unexpected()
	if err == nil || !strings.Contains(err.Error(), "fatal: disk on fire") || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("want exit status and log tail, got %v", err)
	}
	// Negative: a process that Stop ended is not "unexpected".
	q, err := StartProcess("sleeper", "/bin/sleep", []string{"30"}, nil, t.TempDir(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	q.Stop(time.Second)
	if err := q.Unexpected(); err != nil {
		t.Fatalf("stopped process reported as died: %v", err)
	}
}

func TestWaitReadyFailsFastWhenProcessDies(t *testing.T) {
	p, err := StartProcess("dier", "/bin/sh", []string{"-c", "echo 'bind: address already in use'; exit 1"}, nil, t.TempDir(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	err = p.WaitReady(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), "never", func(context.Context) error { return os.ErrNotExist })
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("want the death with log tail, got %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("waited for the timeout instead of noticing the death")
	}
}

// Stop must take the whole process group: a grandchild that ignores
// SIGTERM still dies.
func TestStopKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	p, err := StartProcess("parent", "/bin/sh", []string{"-c", "sh -c 'trap \"\" TERM; echo $$ > " + pidFile + "; while :; do sleep 1; done' & wait"}, nil, dir, dir)
	if err != nil {
		t.Fatal(err)
	}
	var child int
	for i := 0; i < 100 && child == 0; i++ {
		b, _ := os.ReadFile(pidFile)
		child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		time.Sleep(20 * time.Millisecond)
	}
	if child == 0 {
		t.Fatal("grandchild never started")
	}
	p.Stop(500 * time.Millisecond)
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(child, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if syscall.Kill(child, 0) == nil {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(child) + "/stat")
		if !strings.Contains(string(b), ") Z") {
			t.Fatalf("grandchild %d survived Stop", child)
		}
	}
}

func TestCheckBinariesNamesMissingAndFix(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, BinEtcd), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := CheckBinaries(dir, ControlPlaneBinaries...)
	if err == nil || !strings.Contains(err.Error(), "kube-apiserver") || strings.Contains(err.Error(), "etcd,") || !strings.Contains(err.Error(), "make sandbox-build") {
		t.Fatalf("want missing list without etcd and the fix, got %v", err)
	}
	if err := CheckBinaries(dir, BinEtcd); err != nil {
		t.Fatalf("present binary reported missing: %v", err)
	}
}

func TestCheckPortFree(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	if err := checkPortFree("kube-apiserver", port); err == nil || !strings.Contains(err.Error(), "already in use") {
		t.Fatalf("taken port: got %v", err)
	}
	free, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	if err := checkPortFree("kube-apiserver", free); err != nil {
		t.Fatalf("free port reported taken: %v", err)
	}
}
