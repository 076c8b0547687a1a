// Command bootstrap brings Flux onto a Kubernetes cluster and customizes
// Flux's own controllers, in-process, without the flux or kubectl binaries.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/homelab-ops/bootstrap/pkg/gate"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

// run executes the command line and returns the exit code.
func run(ctx context.Context, args []string) int {
	root := newRootCommand()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return gate.ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	fmt.Fprintln(os.Stderr, "error:", err)
	if gate.IsInput(err) || isUsage(err) {
		return gate.ExitInput
	}
	return gate.ExitFailed
}

// exitError carries an exit code after the command already reported.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }
