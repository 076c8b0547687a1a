package lock

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestLock(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	// Without Flux's namespace a command that does not install Flux takes
	// no lock and creates nothing.
	if _, err := Acquire(ctx, cs, Options{Namespace: "flux-system", Command: "bootstrap cutover", Now: clock}); err == nil || !strings.Contains(err.Error(), "Flux is not installed") {
		t.Fatalf("cutover on a cluster without Flux: %v", err)
	}
	if ns, _ := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); len(ns.Items) != 0 {
		t.Fatalf("the refused lock created %v", ns.Items)
	}
	first, err := Acquire(ctx, cs, Options{Namespace: "flux-system", Command: "bootstrap up", CreateNamespace: true, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	if first.TookOver != "" {
		t.Errorf("a fresh lock took over %q", first.TookOver)
	}

	// A second run is refused at once, naming the holder.
	_, err = Acquire(ctx, cs, Options{Namespace: "flux-system", Command: "bootstrap controllers", Now: clock})
	var held *HeldError
	if !errors.As(err, &held) || !strings.Contains(err.Error(), "bootstrap up on ") || !strings.Contains(err.Error(), "--break-lock") {
		t.Fatalf("second run: %v", err)
	}

	// --break-lock takes it at once, saying whose it was.
	broke, err := Acquire(ctx, cs, Options{Namespace: "flux-system", Command: "bootstrap sync", Break: true, Now: clock})
	if err != nil || !strings.Contains(broke.TookOver, "bootstrap up") {
		t.Fatalf("break: %v %q", err, broke.TookOver)
	}
	// The broken run's release leaves the new holder alone.
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := Acquire(ctx, cs, Options{Namespace: "flux-system", Command: "x", Now: clock}); !errors.As(err, &held) {
		t.Fatalf("after the broken run released, the lock must still be held: %v", err)
	}

	// A holder that stopped renewing is taken over after the duration.
	later := func() time.Time { return now.Add(time.Minute) }
	stale, err := Acquire(ctx, cs, Options{Namespace: "flux-system", Command: "bootstrap up", Now: later})
	if err != nil || !strings.Contains(stale.TookOver, "stopped renewing") {
		t.Fatalf("stale: %v %q", err, stale.TookOver)
	}
	broke.stop()
	if err := stale.Release(); err != nil {
		t.Fatal(err)
	}
	// Released: the next run takes it without a take-over.
	next, err := Acquire(ctx, cs, Options{Namespace: "flux-system", Command: "bootstrap up", Now: later})
	if err != nil || next.TookOver != "" {
		t.Fatalf("after release: %v %q", err, next.TookOver)
	}
	_ = next.Release()
}

func TestDeadHolderOnThisHost(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	host, _ := os.Hostname()
	// A process that has exited: its pid is free (the kernel does not reuse
	// it at once).
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := Holder{Host: host, PID: cmd.Process.Pid, Command: "bootstrap up", Since: time.Now()}
	l, err := Acquire(ctx, cs, Options{Namespace: "flux-system", Command: "killed", CreateNamespace: true})
	if err != nil {
		t.Fatal(err)
	}
	l.stop()
	<-l.done
	id, _ := json.Marshal(dead)
	l.rec.HolderIdentity = string(id)
	if err := l.ll.Update(ctx, l.rec); err != nil {
		t.Fatal(err)
	}
	next, err := Acquire(ctx, cs, Options{Namespace: "flux-system", Command: "bootstrap up"})
	if err != nil || !strings.Contains(next.TookOver, "process is gone") {
		t.Fatalf("a dead holder on this host: %v %q", err, next.TookOver)
	}
	_ = next.Release()
	// A live holder on another host is still respected.
	other := Holder{Host: "elsewhere", PID: cmd.Process.Pid, Command: "bootstrap up", Since: time.Now()}
	held, err := Acquire(ctx, cs, Options{Namespace: "flux-system", Command: "x"})
	if err != nil {
		t.Fatal(err)
	}
	held.stop()
	<-held.done
	id, _ = json.Marshal(other)
	held.rec.HolderIdentity = string(id)
	if err := held.ll.Update(ctx, held.rec); err != nil {
		t.Fatal(err)
	}
	var he *HeldError
	if _, err := Acquire(ctx, cs, Options{Namespace: "flux-system", Command: "y"}); !errors.As(err, &he) {
		t.Fatalf("a holder on another host must be respected: %v", err)
	}
}
