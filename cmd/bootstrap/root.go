package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"

	"github.com/homelab-ops/bootstrap/internal/agekey"
	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/internal/flow"
	"github.com/homelab-ops/bootstrap/internal/gate"
	"github.com/homelab-ops/bootstrap/internal/input"
	"github.com/homelab-ops/bootstrap/internal/kube"
	"github.com/homelab-ops/bootstrap/internal/lock"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/internal/progress"
	"github.com/homelab-ops/bootstrap/internal/versions"
)

// app is what every command shares: the streams, the output and cluster
// flag groups, the environment and the pinned versions.
type app struct {
	streams genericiooptions.IOStreams
	getenv  func(string) string
	out     outputFlags
	cluster *genericclioptions.ConfigFlags
	pins    versions.Pins
	pinErr  error

	// The cluster lock: a writing command names itself in lockCommand (not
	// on a dry run) and the Flux namespace in lockNamespace; the first
	// connect takes the lock, execute releases it. lockInstalls says the
	// command installs Flux, so the lock may create the namespace.
	lockCommand   string
	lockNamespace string
	lockInstalls  bool
	breakLock     bool
	lock          *lock.Lock
	cl            *apply.Cluster
	// versionsFile is --versions-file; envNotes say which flags the
	// environment set.
	versionsFile string
	envNotes     []string
	printer      *progress.Printer
	// requests records API requests by verb when countRequests is set.
	countRequests bool
	requests      *kube.Requests
	// binding ends the cluster requests when the command's context ends.
	binding *kube.Binding
}

// outputFlags select where the report goes.
type outputFlags struct {
	format     string
	reportJSON string
	junit      string
	quiet      bool
}

// usageError marks a command-line mistake (exit 2).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }

// exitError carries an exit code after the command already reported.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// run executes the command line and returns the exit code.
func run(ctx context.Context, args []string, streams genericiooptions.IOStreams, getenv func(string) string) int {
	root := newRootCommand(streams, getenv)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return gate.ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	fmt.Fprintln(streams.ErrOut, "error:", input.RedactURLs(err.Error()))
	var ue *usageError
	if errors.As(err, &ue) {
		return gate.ExitInput
	}
	if s := pipeline.SignalOf(ctx); s != nil && !gate.IsInput(err) {
		return s.Code
	}
	return pipeline.ExitCode(err)
}

func newRootCommand(streams genericiooptions.IOStreams, getenv func(string) string) *cobra.Command {
	a := &app{streams: streams, getenv: getenv, cluster: kube.ClusterFlags()}
	a.pins, a.pinErr = versions.Load()
	root := &cobra.Command{
		Use:   "bootstrap",
		Short: "Bring Flux onto a cluster and prove its controllers run as customized",
		Long: `bootstrap renders Flux's components for a pinned version in-process, applies this
repository's controller overlays, and proves with gates that they landed.

Exit codes: 0 all gates passed, 1 a gate or phase failed, 2 usage or input error,
3 incomplete (a required gate could not be checked).`,
		SilenceUsage:      true,
		SilenceErrors:     true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { return a.prepare(cmd) },
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	pf := root.PersistentFlags()
	pf.StringVarP(&a.out.format, "output", "o", "text", "report format on stdout: text (report on stderr) or json (one summary document on stdout)")
	pf.BoolVarP(&a.out.quiet, "quiet", "q", false, "text output: no progress, and only the checks that did not pass and the summary line")
	pf.Var(input.NewOutputFile(&a.out.reportJSON), "report-json", "also write the JSON report to this file")
	pf.Var(input.NewOutputFile(&a.out.junit), "junit", "also write the report as JUnit XML to this file")
	a.cluster.AddFlags(pf)
	pf.StringVar(&a.versionsFile, "versions-file", "", "take the Flux version from FLUX_VERSION in this KEY=VALUE file (e.g. the repository's own versions.env) unless --flux-version is given")
	pf.BoolVar(&a.breakLock, "break-lock", false, "take the cluster lock even though another run holds it (when that run died; its holder is named in the refusal)")

	root.AddCommand(newRenderCommand(a), newControllersCommand(a), newVersionCommand(a))
	root.AddCommand(newAgeKeyCommand(a), newSyncCommand(a), newCutoverCommand(a), newUpCommand(a))
	root.AddCommand(newCheckCommand(a), newConvergeCommand(a), newServeCommand(a))
	root.AddCommand(newStatusCommand(a))
	root.AddCommand(newDocgenCommand(root))
	return root
}

// prepare checks every input the command line, the environment and
// --config give, before the command reads a file or sends a request: each
// flag value's own rule (input.Check) first, so a bad value on the command
// line is refused before --versions-file or --config is read; then the
// environment and --config, through the same value types.
func (a *app) prepare(cmd *cobra.Command) error {
	a.binding = kube.NewBinding(cmd.Context())
	cmd.SetContext(kube.WithBinding(cmd.Context(), a.binding))
	fail := func(err error) error {
		return a.fail(cmd.Context(), gate.NewReport(strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")), err)
	}
	// An input error with a report, like every other.
	if err := input.Check(cmd.Flags()); err != nil {
		return fail(err)
	}
	if err := a.applyEnvironment(cmd); err != nil {
		return err
	}
	if a.out.format != "text" && a.out.format != "json" {
		return &usageError{fmt.Errorf("--output %q: want text or json", a.out.format)}
	}
	if f := cmd.Flags().Lookup("config"); f != nil {
		if err := input.SetFromConfig(cmd.Flags(), f.Value.String()); err != nil {
			return fail(err)
		}
	}
	return nil
}

// connect opens the cluster the cluster flags name; a kubeconfig that
// cannot be loaded is an input error.
func (a *app) connect() (*apply.Cluster, error) {
	cfg, err := a.restConfig()
	if err != nil {
		return nil, err
	}
	if a.countRequests {
		// Every connection of the run counts (up connects once per phase).
		if a.requests == nil {
			a.requests = kube.NewRequests()
		}
		kube.CountRequestsInto(cfg, a.requests)
	}
	cl, err := apply.Connect(cfg)
	a.cl = cl
	return cl, err
}

// opener is how a run's phases open the cluster: lazily, when the first
// of them needs it.
func (a *app) opener() flow.Cluster {
	return flow.Cluster{Connect: a.connect, AgeKey: a.ageKeyConnect, Config: a.restConfig}
}

// restConfig loads the kubeconfig (an input error when it cannot be) and
// binds its requests to the command's context, so an interrupt ends them.
func (a *app) restConfig() (*rest.Config, error) {
	cfg, err := kube.Config(a.cluster)
	if err != nil {
		return nil, gate.InputErrorf("%w", err)
	}
	if a.binding != nil {
		a.binding.Wrap(cfg)
	}
	return cfg, nil
}

// acquire takes the cluster lock for a writing command; the pipeline calls
// it after the before-gates, before the first write.
func (a *app) acquire(ctx context.Context) error {
	if a.lockCommand == "" || a.lock != nil {
		return nil
	}
	if a.cl == nil {
		if _, err := a.connect(); err != nil {
			return err
		}
	}
	ns := a.lockNamespace
	if ns == "" {
		ns = DefaultFluxNamespace
	}
	l, err := lock.Acquire(ctx, a.cl.Clientset, lock.Options{Namespace: ns, Command: a.lockCommand, Break: a.breakLock, CreateNamespace: a.lockInstalls})
	a.lock = l
	return err
}

// writes marks the run as one that changes the cluster: it takes the lock.
func (a *app) writes(command, namespace string, dryRun bool) {
	if !dryRun {
		a.lockCommand, a.lockNamespace = "bootstrap "+command, namespace
	}
}

// installs is writes for a command that installs Flux: the lock may create
// the Flux namespace.
func (a *app) installs(command, namespace string, dryRun bool) {
	a.writes(command, namespace, dryRun)
	a.lockInstalls = !dryRun
}

// release frees the cluster lock, noting a take-over in the report.
func (a *app) release(r *gate.Report) {
	if a.lock == nil {
		return
	}
	if a.lock.TookOver != "" {
		r.Warn("cluster lock: " + a.lock.TookOver)
	}
	if err := a.lock.Release(); err != nil {
		r.Warn("cluster lock: release failed (" + err.Error() + "); it expires by itself")
	}
	a.lock = nil
}

// newRun starts a pipeline run whose progress lines go to stderr in text
// mode (and nowhere in JSON mode, where stdout is the document).
func (a *app) newRun(command string, dryRun bool) *pipeline.Run {
	r := gate.NewReport(command)
	r.DryRun = dryRun
	for i, n := range a.envNotes {
		r.Facts[fmt.Sprintf("environment.%d", i+1)] = n
	}
	pr := progress.New(a.streams.ErrOut, progress.Options{Quiet: a.out.quiet || a.out.format != "text", Getenv: a.getenv})
	a.printer = pr
	return &pipeline.Run{Report: r, DryRun: dryRun, Progress: func(line string) { pr.Line(input.RedactURLs(line)) }, BeforeWrite: a.acquire,
		OnPhase:     pr.Start,
		OnPhaseDone: func(name string, v gate.Verdict, took time.Duration) { pr.Done(name, string(v), took) },
	}
}

// execute runs the phases and reports.
func (a *app) execute(ctx context.Context, run *pipeline.Run, phases ...pipeline.Phase) error {
	if a.pinErr != nil {
		return a.fail(ctx, run.Report, a.pinErr)
	}
	err := pipeline.Execute(ctx, run, phases...)
	a.release(run.Report)
	if a.requests != nil {
		run.Report.Facts["apiRequests"] = strconv.Itoa(a.requests.Total())
		run.Report.Facts["apiRequestsByVerb"] = a.requests.String()
	}
	if err != nil {
		return a.fail(ctx, run.Report, err)
	}
	return a.finish(run.Report)
}

// finish writes the report where asked and turns it into the exit code.
func (a *app) finish(r *gate.Report) error {
	// Nothing that looks like key material leaves the process, whichever
	// phase read it.
	agekey.RedactReport(r)
	// URLs read back from a cluster may carry credentials someone else put
	// there: no report channel shows them.
	input.RedactReport(r)
	var errs []string
	if a.out.format == "json" {
		if err := gate.WriteJSON(a.streams.Out, r); err != nil {
			errs = append(errs, err.Error())
		}
	} else {
		write := gate.WriteText
		if a.out.quiet {
			write = gate.WriteSummary
		}
		if err := write(a.streams.ErrOut, r); err != nil {
			errs = append(errs, err.Error())
		}
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
	write(a.out.reportJSON, func(f *os.File) error { return gate.WriteJSON(f, r) })
	write(a.out.junit, func(f *os.File) error { return gate.WriteJUnit(f, r) })
	if len(errs) > 0 {
		fmt.Fprintln(a.streams.ErrOut, "error: report:", strings.Join(errs, "; "))
		return &exitError{code: gate.ExitInput}
	}
	if code := r.ExitCode(); code != gate.ExitOK {
		return &exitError{code: code}
	}
	return nil
}

// fail records an error that stopped the run in the report, so JSON and
// JUnit readers see it too, and exits with its code: 2 for an input error,
// 1 otherwise; when a signal cancelled ctx (the command's), the error says
// so and the exit code is the signal's.
func (a *app) fail(ctx context.Context, r *gate.Report, err error) error {
	var ie *pipeline.Interrupted
	if s := pipeline.SignalOf(ctx); s != nil && !errors.As(err, &ie) && !gate.IsInput(err) {
		err = fmt.Errorf("%w: %v", s, err)
	}
	r.Error = err.Error()
	if code := pipeline.ExitCode(err); code != gate.ExitInput {
		r.ErrorCode = code
	}
	return a.finish(r)
}
