package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/homelab-ops/bootstrap/internal/flow"
	"github.com/homelab-ops/bootstrap/internal/input"
	"github.com/homelab-ops/bootstrap/internal/kube"
	"github.com/homelab-ops/bootstrap/internal/session"
	"github.com/homelab-ops/bootstrap/internal/versions"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// app is the wiring every command shares: the streams, the environment,
// the pinned versions and the run session (internal/session), which holds
// the run's behaviour — cluster, lock, reports, exit codes.
type app struct {
	streams genericiooptions.IOStreams
	getenv  func(string) string
	pins    versions.Pins
	s       *session.Session
	// versionsFile is --versions-file.
	versionsFile string
	// started says the command's hooks began (prepare): an error before
	// them is cobra refusing the command line (commandLineError).
	started bool
}

func newApp(streams genericiooptions.IOStreams, getenv func(string) string) *app {
	a := &app{streams: streams, getenv: getenv, s: session.New(streams.Out, streams.ErrOut, getenv, kube.ClusterFlags(getenv))}
	a.s.Reword = flagError
	a.pins, a.s.Setup = versions.Load()
	return a
}

// run executes the command line and returns the exit code (app.exit).
func run(ctx context.Context, args []string, streams genericiooptions.IOStreams, getenv func(string) string) int {
	a := newApp(streams, getenv)
	root := newRoot(a)
	root.SetArgs(args)
	return a.exit(ctx, root.ExecuteContext(ctx))
}

func newRootCommand(streams genericiooptions.IOStreams, getenv func(string) string) *cobra.Command {
	return newRoot(newApp(streams, getenv))
}

func newRoot(a *app) *cobra.Command {
	streams := a.streams
	root := &cobra.Command{
		Use:   "bootstrap",
		Short: "Bring Flux onto a cluster and prove its controllers run as customized",
		Long: `bootstrap renders Flux's components for a pinned version in-process, applies this
repository's controller overlays, and proves with gates that they landed.

` + session.ExitCodesHelp(),
		SilenceUsage:      true,
		SilenceErrors:     true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { return a.prepare(cmd) },
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &verify.InputError{Err: err} })
	pf := root.PersistentFlags()
	out := &a.s.Output
	pf.StringVarP(&out.Format, "output", "o", "text", "report format on stdout: text (report on stderr) or json (one summary document on stdout); diff also markdown")
	pf.BoolVarP(&out.Quiet, "quiet", "q", false, "text output: no progress, and only the checks that did not pass and the summary line")
	pf.BoolVar(&out.Verbose, "verbose", false, "text output: every check, passes included, with all its evidence (default: a summary line per gate and the findings grouped by cause)")
	pf.Var(input.NewOutputFile(&out.ReportJSON), "report-json", "also write the JSON report to this file")
	pf.Var(input.NewOutputFile(&out.JUnit), "junit", "also write the report as JUnit XML to this file")
	a.s.Cluster.AddFlags(pf)
	pf.StringVar(&a.versionsFile, "versions-file", "", "take the Flux version from FLUX_VERSION in this KEY=VALUE file (e.g. the repository's own versions.env) unless --flux-version is given")
	pf.BoolVar(&a.s.BreakLock, "break-lock", false, "take the cluster lock even though another run holds it (when that run died; its holder is named in the refusal)")

	root.AddCommand(newRenderCommand(a), newControllersCommand(a), newVersionsCommand(a), newVersionCommand(a))
	root.AddCommand(newAgeKeyCommand(a), newSyncCommand(a), newCutoverCommand(a), newUpCommand(a))
	root.AddCommand(newCheckCommand(a), newConvergeCommand(a), newServeCommand(a))
	root.AddCommand(newStatusCommand(a))
	root.AddCommand(newDiffCommand(a))
	root.AddCommand(newDocgenCommand(root))
	return root
}

// prepare checks every input the command line, the environment and
// --config give, before the command reads a file or sends a request: each
// flag value's own rule (input.Check) first, so a bad value on the command
// line is refused before --versions-file or --config is read; then the
// environment and --config, through the same value types.
func (a *app) prepare(cmd *cobra.Command) error {
	a.started = true
	cmd.SetContext(a.s.Bind(cmd.Context()))
	fail := func(err error) error {
		return a.s.Fail(cmd.Context(), verify.NewReport(strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")), err)
	}
	if err := a.checkOutput(cmd); err != nil {
		return err
	}
	// An input error with a report, like every other.
	if err := input.Check(cmd.Flags()); err != nil {
		return fail(err)
	}
	if err := a.applyEnvironment(cmd); err != nil {
		return err
	}
	if err := a.checkOutput(cmd); err != nil { // BOOTSTRAP_OUTPUT
		return err
	}
	if f := cmd.Flags().Lookup("config"); f != nil {
		if err := input.SetFromConfig(cmd.Flags(), f.Value.String()); err != nil {
			return fail(err)
		}
	}
	return nil
}

// opener is how a run's phases open the cluster: lazily, when the first
// of them needs it.
func (a *app) opener() flow.Cluster {
	return flow.Cluster{Connect: a.s.Connect, AgeKey: a.s.AgeKeyConnect, Config: a.s.RestConfig}
}
