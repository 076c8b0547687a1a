// Command bootstrap brings Flux onto a Kubernetes cluster and customizes
// Flux's own controllers, in-process, without the flux or kubectl binaries.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, os.Getenv)
	stop()
	os.Exit(code)
}
