package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/internal/session"
)

// TestInterruptExitCodes: a run whose context a signal cancelled reports
// "interrupted" with the phase, in text and JSON, and exits 128+signal.
func TestInterruptExitCodes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"HOME": t.TempDir(), "KUBECONFIG": filepath.Join(t.TempDir(), "none")}
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(pipeline.Signal(tc.sig))
			for _, format := range []string{"text", "json"} {
				var o, e bytes.Buffer
				code := run(ctx, []string{"render", "-o", format, "--output-dir", t.TempDir()}, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &o, ErrOut: &e}, func(k string) string { return env[k] })
				if code != tc.code {
					t.Fatalf("%s: exit %d, want %d\n%s%s", format, code, tc.code, o.String(), e.String())
				}
				out := o.String() + e.String()
				if !strings.Contains(out, "interrupted by "+pipeline.Signal(tc.sig).Name) || !strings.Contains(out, "phase controllers interrupted during its checks: nothing of it was applied") {
					t.Errorf("%s: the report does not say what was interrupted:\n%s", format, out)
				}
				if format == "json" {
					var doc struct{ ExitCode int }
					if err := json.Unmarshal(o.Bytes(), &doc); err != nil || doc.ExitCode != tc.code {
						t.Errorf("JSON exitCode %d (%v), want %d", doc.ExitCode, err, tc.code)
					}
				}
			}
		})
	}
}

// TestWithSignals: the signal that arrives is the context's cause.
func TestWithSignals(t *testing.T) {
	t.Parallel()
	ctx, stop := session.WithSignals(context.Background(), syscall.SIGUSR1)
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the signal did not cancel the context")
	}
	var s *pipeline.SignalError
	if !errors.As(context.Cause(ctx), &s) || session.Code(context.Background(), s, nil) != 128+int(syscall.SIGUSR1) {
		t.Errorf("cause %v, want the signal", context.Cause(ctx))
	}
}

// TestInterruptWhileTalkingToCluster: a signal while a request hangs (an
// API server that accepts connections and never answers) stops the run
// at once with the interrupt's exit code and the phase it was in.
func TestInterruptWhileTalkingToCluster(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://`+l.Addr().String()+`", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	time.AfterFunc(time.Second, func() { cancel(pipeline.Signal(syscall.SIGINT)) })
	var o, e bytes.Buffer
	start := time.Now()
	code := run(ctx, []string{"sync", "--repo", "../../testdata/homelab", "--env", "dev", "--check=false", "--kubeconfig", kubeconfig},
		genericiooptions.IOStreams{In: strings.NewReader(""), Out: &o, ErrOut: &e}, func(string) string { return "" })
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("took %s after the interrupt", took)
	}
	if code != 130 || !strings.Contains(e.String(), "interrupted by SIGINT: phase sync interrupted") {
		t.Fatalf("exit %d, want 130 and the phase\n%s", code, e.String())
	}
}
