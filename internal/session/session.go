// Package session is one run of a command: the cluster connection and its
// request count, the cluster lock, the progress printer, the reports (text
// on stderr or JSON on stdout, --report-json, --junit, and extra files such
// as check's SARIF), interrupts and the exit-code policy. Every command runs
// its phases through a Session; cmd/bootstrap keeps only flags and wiring.
package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/fluxcd/pkg/ssa"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/internal/input"
	"github.com/homelab-ops/bootstrap/internal/kube"
	"github.com/homelab-ops/bootstrap/internal/lock"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/internal/progress"
	"github.com/homelab-ops/bootstrap/internal/redact"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// DefaultLockNamespace is where the lock lives when a command names none.
const DefaultLockNamespace = fluxobj.DefaultNamespace

// Output selects where the report goes (the persistent output flags).
type Output struct {
	Format     string // text (report on stderr) or json (one document on stdout)
	ReportJSON string
	JUnit      string
	Quiet      bool
	// Verbose writes every check with its evidence (verify.WriteVerbose)
	// instead of the findings grouped by cause.
	Verbose bool
}

// Session is what one command run shares. The exported fields are set by
// the command line's wiring before the command runs.
type Session struct {
	Out, ErrOut io.Writer
	Getenv      func(string) string
	Output      Output
	Cluster     *kube.Flags
	// BreakLock takes the cluster lock even though another run holds it.
	BreakLock bool
	// Origins say which flags the environment set, and from where: facts
	// of every report (environment.N).
	Origins []Origin
	// Setup is an error found before the command ran (the pinned versions
	// did not load): Execute reports it instead of running.
	Setup error
	// Reword says an error that stops a run in the command line's words
	// (its flags for pkg/components' typed refusals) before the report,
	// the exit code and the reasons of the gates that did not run see it;
	// nil keeps the error as it is.
	Reword func(error) error

	// The cluster lock: a writing command names itself (not on a dry run)
	// and the Flux namespace; the first write takes the lock, Execute
	// releases it. installs says the lock may create the namespace.
	lockCommand, lockNamespace string
	installs                   bool
	lock                       *lock.Lock
	cl                         *apply.Cluster
	countRequests              bool
	requests                   *kube.Requests
	printer                    *progress.Printer
	binding                    *kube.Binding
}

// New is a session writing to out and errOut, reading the environment with
// getenv and the cluster flags cluster.
func New(out, errOut io.Writer, getenv func(string) string, cluster *kube.Flags) *Session {
	return &Session{Out: out, ErrOut: errOut, Getenv: getenv, Cluster: cluster, Output: Output{Format: "text"}}
}

// Bind ties the session's cluster requests to ctx: when it ends (an
// interrupt), they end.
func (s *Session) Bind(ctx context.Context) context.Context {
	s.binding = kube.NewBinding(ctx)
	return kube.WithBinding(ctx, s.binding)
}

// CountRequests records the run's API requests by verb in its report.
func (s *Session) CountRequests() { s.countRequests = true }

// Writes marks the run as one that changes the cluster: it takes the lock
// (not on a dry run) in namespace ("" is flux-system).
func (s *Session) Writes(command, namespace string, dryRun bool) {
	if !dryRun {
		s.lockCommand, s.lockNamespace = "bootstrap "+command, namespace
	}
}

// Installs is Writes for a command that installs Flux: the lock may create
// the Flux namespace.
func (s *Session) Installs(command, namespace string, dryRun bool) {
	s.Writes(command, namespace, dryRun)
	s.installs = !dryRun
}

// RestConfig loads the kubeconfig (an input error when it cannot be) and
// binds its requests to the command's context, so an interrupt ends them.
func (s *Session) RestConfig() (*rest.Config, error) {
	cfg, err := kube.Config(s.Cluster)
	if err != nil {
		return nil, verify.InputErrorf("%w", err)
	}
	if s.binding != nil {
		s.binding.Wrap(cfg)
	}
	return cfg, nil
}

// Connect opens the cluster the cluster flags name; every connection of
// the run counts its requests when CountRequests was called.
func (s *Session) Connect() (*apply.Cluster, error) {
	cfg, err := s.RestConfig()
	if err != nil {
		return nil, err
	}
	if s.countRequests {
		if s.requests == nil {
			s.requests = kube.NewRequests()
		}
		kube.CountRequestsInto(cfg, s.requests)
	}
	cl, err := apply.Connect(cfg)
	s.cl = cl
	return cl, err
}

// AgeKeyConnect is Connect as the age-key phases take it.
func (s *Session) AgeKeyConnect() (client.Client, *ssa.ResourceManager, error) {
	cl, err := s.Connect()
	if err != nil {
		return nil, nil, err
	}
	return cl.Client, cl.Manager, nil
}

// ReadOnlyConnect opens the cluster once for every phase, through a
// transport that sends only GETs (kube.ReadOnly) and records them in rec.
func (s *Session) ReadOnlyConnect(rec *kube.Requests) func() (*apply.Cluster, error) {
	var cl *apply.Cluster
	return func() (*apply.Cluster, error) {
		if cl != nil {
			return cl, nil
		}
		cfg, err := s.RestConfig()
		if err != nil {
			return nil, err
		}
		kube.ReadOnly(cfg, rec)
		c, err := apply.Connect(cfg)
		if err != nil {
			return nil, err
		}
		cl = c
		return cl, nil
	}
}

// acquire takes the cluster lock for a writing command; the pipeline calls
// it after the before-gates, before the first write.
func (s *Session) acquire(ctx context.Context) error {
	if s.lockCommand == "" || s.lock != nil {
		return nil
	}
	if s.cl == nil {
		if _, err := s.Connect(); err != nil {
			return err
		}
	}
	ns := s.lockNamespace
	if ns == "" {
		ns = DefaultLockNamespace
	}
	l, err := lock.Acquire(ctx, s.cl.Clientset, lock.Options{Namespace: ns, Command: s.lockCommand, Break: s.BreakLock, CreateNamespace: s.installs})
	s.lock = l
	return err
}

// release frees the cluster lock, noting a take-over in the report.
func (s *Session) release(r *verify.Report) {
	if s.lock == nil {
		return
	}
	if s.lock.TookOver != "" {
		r.Warn("cluster lock: " + s.lock.TookOver)
	}
	if err := s.lock.Release(); err != nil {
		r.Warn("cluster lock: release failed (" + err.Error() + "); it expires by itself")
	}
	s.lock = nil
}

// NewRun starts a pipeline run whose progress lines go to stderr in text
// mode (and nowhere in JSON mode, where stdout is the document).
func (s *Session) NewRun(command string, dryRun bool) *pipeline.Run {
	r := verify.NewReport(command)
	r.DryRun = dryRun
	for i, o := range s.Origins {
		r.Facts[fmt.Sprintf("environment.%d", i+1)] = o.String()
	}
	pr := progress.New(s.ErrOut, progress.Options{Quiet: s.Output.Quiet || s.Output.Format != "text", Getenv: s.Getenv})
	s.printer = pr
	return &pipeline.Run{Report: r, DryRun: dryRun, Progress: func(line string) { pr.Line(input.RedactURLs(line)) }, BeforeWrite: s.acquire,
		Reword:      s.Reword,
		OnPhase:     pr.Start,
		OnPhaseDone: func(name string, v verify.Verdict, took time.Duration) { pr.Done(name, string(v), took) },
	}
}

// Line prints a progress line of the current run (the plan).
func (s *Session) Line(line string) {
	if s.printer != nil {
		s.printer.Line(line)
	}
}

// Execute runs the phases and reports.
func (s *Session) Execute(ctx context.Context, run *pipeline.Run, phases ...pipeline.Phase) error {
	return s.ExecuteThen(ctx, run, nil, phases...)
}

// ExecuteThen is Execute with then run after the phases when they did not
// stop with an error (render's manifests, check's SARIF): an error of then
// stops the run as a phase's would.
func (s *Session) ExecuteThen(ctx context.Context, run *pipeline.Run, then func() error, phases ...pipeline.Phase) error {
	if s.Setup != nil {
		return s.Fail(ctx, run.Report, s.Setup)
	}
	err := pipeline.Execute(ctx, run, phases...)
	s.release(run.Report)
	if s.requests != nil {
		run.Report.Facts["apiRequests"] = strconv.Itoa(s.requests.Total())
		run.Report.Facts["apiRequestsByVerb"] = s.requests.String()
	}
	if err == nil && then != nil {
		err = then()
	}
	if err != nil {
		return s.Fail(ctx, run.Report, err)
	}
	return s.Finish(run.Report)
}

// Finish writes the report where asked and turns it into the exit code
// (Code of its verdicts).
func (s *Session) Finish(r *verify.Report) error {
	return s.finish(r, ReportCode(r))
}

// finish writes the report, carrying code, where asked and returns code as
// an *ExitError (nil for 0).
func (s *Session) finish(r *verify.Report, code int) error {
	r.ExitCode = code
	// Nothing that looks like key material leaves the process, whichever
	// phase read it; nor a URL credential read back from a cluster.
	r.Rewrite(redact.AgeIdentities)
	input.RedactReport(r)
	var errs []string
	if s.Output.Format == "json" {
		if err := verify.WriteJSON(s.Out, r); err != nil {
			errs = append(errs, err.Error())
		}
	} else {
		write := verify.WriteText
		switch {
		case s.Output.Quiet:
			write = verify.WriteSummary
		case s.Output.Verbose:
			write = verify.WriteVerbose
		}
		if err := write(s.ErrOut, r); err != nil {
			errs = append(errs, err.Error())
		}
	}
	for _, f := range []struct {
		path  string
		write func(io.Writer, *verify.Report) error
	}{{s.Output.ReportJSON, verify.WriteJSON}, {s.Output.JUnit, verify.WriteJUnit}} {
		if f.path == "" {
			continue
		}
		if err := WriteFile(f.path, func(w io.Writer) error { return f.write(w, r) }); err != nil {
			errs = append(errs, fmt.Sprintf("write %s: %v", f.path, err))
		}
	}
	if len(errs) > 0 {
		fmt.Fprintln(s.ErrOut, "error: report:", strings.Join(errs, "; "))
		return &ExitError{Code: ExitInput}
	}
	if code != ExitOK {
		return &ExitError{Code: code}
	}
	return nil
}

// Fail records an error that stopped the run (reworded: Reword) in the
// report, so JSON and JUnit readers see it too, and exits with its code
// (Code): 2 for an input error, 1 otherwise; when a signal cancelled ctx
// (the command's), the error says so and the exit code is the signal's.
func (s *Session) Fail(ctx context.Context, r *verify.Report, err error) error {
	if s.Reword != nil {
		err = s.Reword(err)
	}
	var ie *pipeline.Interrupted
	if sig := pipeline.SignalOf(ctx); sig != nil && !errors.As(err, &ie) && !verify.IsInput(err) {
		err = fmt.Errorf("%w: %v", sig, err)
	}
	r.Error = err.Error()
	return s.finish(r, Code(ctx, err, nil))
}

// WriteFile creates path and writes it with w.
func WriteFile(path string, w func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = w(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
