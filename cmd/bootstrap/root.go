package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/homelab-ops/bootstrap/pkg/gate"
	"github.com/homelab-ops/bootstrap/pkg/kube"
)

// reportFlags select where the gate report goes, and which cluster the
// cluster commands talk to.
type reportFlags struct {
	output     string
	reportJSON string
	junit      string
	kube       kube.Options
}

// usageError marks a command-line mistake (exit 2).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }

func isUsage(err error) bool {
	var ue *usageError
	return errors.As(err, &ue)
}

func newRootCommand() *cobra.Command {
	rf := &reportFlags{}
	root := &cobra.Command{
		Use:   "bootstrap",
		Short: "Bring Flux onto a cluster and prove its controllers run as customized",
		Long: `bootstrap renders Flux's components for a pinned version in-process, applies this
repository's controller overlays, and proves with gates that they landed.

Exit codes: 0 all gates passed, 1 a gate or phase failed, 2 usage or input error,
3 incomplete (a required gate could not be checked).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if rf.output != "text" && rf.output != "json" {
				return &usageError{fmt.Errorf("--output %q: want text or json", rf.output)}
			}
			return nil
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	pf := root.PersistentFlags()
	pf.StringVarP(&rf.output, "output", "o", "text", "report format on stdout: text (report on stderr) or json (one summary document on stdout)")
	pf.StringVar(&rf.reportJSON, "report-json", "", "also write the JSON report to this file")
	pf.StringVar(&rf.junit, "junit", "", "also write the report as JUnit XML to this file")
	pf.StringVar(&rf.kube.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	pf.StringVar(&rf.kube.Context, "context", "", "kubeconfig context (default: the current context)")
	pf.DurationVar(&rf.kube.Timeout, "request-timeout", 30*time.Second, "timeout of each API request")

	root.AddCommand(newRenderCommand(rf), newControllersCommand(rf), newVersionCommand())
	root.AddCommand(newAgeKeyCommand(rf), newSyncCommand(rf), newCutoverCommand(rf))
	root.AddCommand(newConvergeCommand(rf))
	return root
}

// finish writes the report where asked and turns it into the exit code.
func finish(rf *reportFlags, r *gate.Report) error {
	var errs []string
	if rf.output == "json" {
		if err := gate.WriteJSON(os.Stdout, r); err != nil {
			errs = append(errs, err.Error())
		}
	} else if err := gate.WriteText(os.Stderr, r); err != nil {
		errs = append(errs, err.Error())
	}
	write := func(path string, w func(*os.File) error) {
		if path == "" {
			return
		}
		f, err := os.Create(path)
		if err == nil {
			err = w(f)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("write %s: %v", path, err))
		}
	}
	write(rf.reportJSON, func(f *os.File) error { return gate.WriteJSON(f, r) })
	write(rf.junit, func(f *os.File) error { return gate.WriteJUnit(f, r) })
	if len(errs) > 0 {
		fmt.Fprintln(os.Stderr, "error: report:", strings.Join(errs, "; "))
		return &exitError{code: gate.ExitInput}
	}
	if code := r.ExitCode(); code != gate.ExitOK {
		return &exitError{code: code}
	}
	return nil
}

// fail records an error that stopped the run in the report, so JSON and
// JUnit readers see it too, and exits with its code.
func fail(rf *reportFlags, r *gate.Report, err error) error {
	if !gate.IsInput(err) {
		// Not an input error: report it as a failed run, not exit 2.
		r.Add(gate.Check{ID: "run", Phase: "run", Stage: gate.After, Title: "run completed", Verdict: gate.Fail, Message: err.Error()})
		return finish(rf, r)
	}
	r.Error = err.Error()
	return finish(rf, r)
}
