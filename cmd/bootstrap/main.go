// Command bootstrap brings Flux onto a Kubernetes cluster and customizes
// Flux's own controllers, in-process, without the flux or kubectl binaries.
package main

import (
	"context"
	"os"
	"runtime/debug"
	"syscall"

	"github.com/go-logr/logr"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/homelab-ops/bootstrap/internal/check"
	"github.com/homelab-ops/bootstrap/internal/session"
)

func main() {
	// controller-runtime (converge's informers are its cache) logs through a
	// logger of its own; the tool speaks through its gates and progress
	// lines, so that log is discarded instead of controller-runtime printing
	// "log.SetLogger(...) was never called" with a goroutine stack on the
	// first watch error (an API server restart).
	ctrllog.SetLogger(logr.Discard())
	tuneGC(os.LookupEnv)
	ctx, cancel := session.WithSignals(context.Background(), os.Interrupt, syscall.SIGTERM)
	// kustomize prints its deprecation notices straight to os.Stderr at
	// every build: not the report, so filtered out of what reaches it.
	stderr := os.Stderr
	restore := check.FilterKustomizeNotices(stderr)
	code := run(ctx, os.Args[1:], genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: stderr}, os.Getenv)
	restore()
	cancel()
	os.Exit(code)
}

// tuneGC sets the collector's target for the process to check.GCPercent
// (checks dominate what this binary allocates: check, diff, up's static
// phase) and returns the target before; a GOGC in the environment is the
// user's choice, left as it is. Here, not in the library: a process-wide
// knob is the binary's to turn.
func tuneGC(lookupEnv func(string) (string, bool)) int {
	if _, set := lookupEnv("GOGC"); set {
		v := debug.SetGCPercent(100)
		debug.SetGCPercent(v)
		return v
	}
	return debug.SetGCPercent(check.GCPercent)
}
