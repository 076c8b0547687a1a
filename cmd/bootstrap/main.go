// Command bootstrap brings Flux onto a Kubernetes cluster and customizes
// Flux's own controllers, in-process, without the flux or kubectl binaries.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/homelab-ops/bootstrap/internal/pipeline"
)

func main() {
	ctx, cancel := withSignals(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, os.Getenv)
	cancel()
	os.Exit(code)
}

// withSignals is signal.NotifyContext that keeps which signal arrived: the
// context is cancelled with a *pipeline.SignalError as its cause, so the
// run reports "interrupted" and exits 130 (SIGINT) or 143 (SIGTERM). A
// second signal gets the default behaviour: the process dies at once.
func withSignals(parent context.Context, sigs ...os.Signal) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	go func() {
		select {
		case s := <-ch:
			signal.Stop(ch)
			cancel(pipeline.Signal(s))
		case <-ctx.Done():
		}
	}()
	return ctx, func() { signal.Stop(ch); cancel(nil) }
}
