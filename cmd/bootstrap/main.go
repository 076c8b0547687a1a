// Command bootstrap brings Flux onto a Kubernetes cluster and customizes
// Flux's own controllers, in-process, without the flux or kubectl binaries.
package main

import (
	"context"
	"os"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/homelab-ops/bootstrap/internal/session"
)

func main() {
	ctx, cancel := session.WithSignals(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, os.Getenv)
	cancel()
	os.Exit(code)
}
