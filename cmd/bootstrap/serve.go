package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/homelab-ops/bootstrap/internal/flow"
	"github.com/homelab-ops/bootstrap/internal/input"
	"github.com/homelab-ops/bootstrap/internal/serve"
	"github.com/homelab-ops/bootstrap/internal/session"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// serveAuto is --serve without a value: the address this machine reaches
// the API server from, and a free port.
const serveAuto = "auto"

// serveAddrRule is --serve's form: auto, or an address serve accepts.
func serveAddrRule(v string) error {
	if v == serveAuto {
		return nil
	}
	return serve.Options{Addr: v, For: time.Hour}.Validate()
}

// serveFlags are --serve and --cutover-when-ready, on up and sync.
type serveFlags struct {
	addr        string
	url         string
	serveFor    time.Duration
	whenReady   bool
	cutoverWait time.Duration
}

func (f *serveFlags) add(fl *pflag.FlagSet) {
	fl.Var(input.NewRuled(&f.addr, "ADDR", serveAddrRule), "serve", "serve the repository to the cluster from this machine as the temporary source (HTTPS, read-only, a token made for the run) until cutover: a Git repository for a GitRepository root, a Flux OCI artifact of the work tree for an OCIRepository root; --serve alone listens on the address this machine reaches the API server from and a free port, --serve=HOST:PORT on that address")
	fl.Lookup("serve").NoOptDefVal = serveAuto
	fl.StringVar(&f.url, "serve-url", "", "with --serve: the base URL the cluster reaches this machine at (https://HOST[:PORT], a DNS name or NAT) instead of the listen address")
	fl.Var(input.NewDuration(&f.serveFor, 24*time.Hour), "serve-for", "with --serve: stop serving after this long even without a cutover")
	fl.BoolVar(&f.whenReady, "cutover-when-ready", false, "after converge, wait until the cluster reaches the source git declares at the temporary source's revision, then cut over to it (and the served source stops)")
	fl.Var(input.NewDuration(&f.cutoverWait, 15*time.Minute), "cutover-timeout", "with --cutover-when-ready: how long to wait for the final source; at its end exit 1, the temporary source still serving")
}

// validate checks the flags' combinations before anything is read.
func (f *serveFlags) validate(fl *pflag.FlagSet, srcURL string) error {
	switch {
	case f.addr == "" && input.Given(fl, "serve-for"):
		return verify.InputErrorf("--serve-for needs --serve")
	case !f.whenReady && input.Given(fl, "cutover-timeout"):
		return verify.InputErrorf("--cutover-timeout needs --cutover-when-ready")
	case f.addr != "" && srcURL != "":
		return verify.InputErrorf("--serve and --source-url are exclusive: --serve makes this machine the temporary source, --source-url names another")
	case f.addr == "" && (f.url != ""):
		return verify.InputErrorf("--serve-url needs --serve")
	case f.whenReady && f.cutoverWait <= 0:
		return verify.InputErrorf("--cutover-timeout %s: must be positive, e.g. 15m", f.cutoverWait)
	}
	if f.addr == "" {
		return nil
	}
	addr := f.addr
	if addr == serveAuto {
		addr = ""
	}
	return serve.Options{Addr: addr, URL: f.url, For: f.serveFor}.Validate()
}

// options are --serve's for the run (nil without --serve).
func (f *serveFlags) options(getenv func(string) string) *flow.Serve {
	if f.addr == "" {
		return nil
	}
	addr := f.addr
	if addr == serveAuto {
		addr = ""
	}
	return &flow.Serve{Addr: addr, URL: f.url, For: f.serveFor, Getenv: getenv, RunArgs: []string{"serve", "run"}}
}

func newServeCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "The temporary Git source this machine serves (up/sync --serve): status and stop",
		Long: `'bootstrap up --serve' and 'bootstrap sync --serve' start a detached process that serves the
repository to the cluster over HTTPS until the GitRepository reads another URL (cutover), until
--serve-for, or until 'bootstrap serve stop'. One server per cluster (by the kubeconfig's API
server); its state lives under $BOOTSTRAP_STATE_DIR (default $XDG_STATE_HOME/bootstrap or
~/.local/state/bootstrap).`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newServeStatusCommand(a), newServeStopCommand(a), newServeRunCommand(a))
	return cmd
}

// serveDir is the state directory of the cluster the kubeconfig names.
func (a *app) serveDir() (string, error) {
	cfg, err := a.s.RestConfig()
	if err != nil {
		return "", err
	}
	dirs, err := serve.DefaultDirs(a.getenv)
	if err != nil {
		return "", verify.InputErrorf("%w", err)
	}
	return dirs.For(cfg.Host), nil
}

// serveStatus is what status and stop print.
type serveStatus struct {
	Running bool         `json:"running"`
	Stopped bool         `json:"stopped,omitempty"`
	State   *serve.State `json:"state,omitempty"`
}

func (a *app) printServe(s serveStatus) error {
	if a.s.Output.Format == "json" {
		e := json.NewEncoder(a.streams.Out)
		e.SetIndent("", "  ")
		return e.Encode(s)
	}
	w := a.streams.ErrOut
	switch {
	case s.State == nil:
		fmt.Fprintln(w, "no temporary source is served from this machine for this cluster")
	case s.Stopped:
		fmt.Fprintf(w, "stopped the temporary source %s (pid %d)\n", s.State.URL, s.State.PID)
	case s.Running:
		st := s.State
		fmt.Fprintf(w, "serving %s at %s\n  pid %d since %s, until %s\n  for GitRepository %s/%s of %s\n  from %s\n  log %s\n",
			st.Revision, st.URL, st.PID, st.Started.Format(time.RFC3339), st.Until.Format(time.RFC3339), st.Namespace, st.Name, st.Cluster, st.Origin, st.Log)
	default:
		fmt.Fprintf(w, "not running (last served %s at %s)\n", s.State.Revision, s.State.URL)
	}
	return nil
}

func newServeStatusCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Say whether this machine serves a temporary source for the cluster, and what",
		Long:  "Exit 0 while a server runs, 1 when none does.",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			dir, err := a.serveDir()
			if err != nil {
				return &verify.InputError{Err: err}
			}
			st, err := serve.ReadState(dir)
			if err != nil {
				return err
			}
			running, err := serve.Running(dir)
			if err != nil {
				return err
			}
			if err := a.printServe(serveStatus{Running: running && st != nil, State: st}); err != nil {
				return err
			}
			if !running {
				return &session.ExitError{Code: session.ExitFailed}
			}
			return nil
		},
	}
}

func newServeStopCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "stop",
		Short: "Stop the temporary source this machine serves for the cluster",
		Long: `Stops the serving process (SIGTERM, then SIGKILL). The GitRepository keeps its temporary
URL: run 'bootstrap cutover' to move it to its final source, or 'bootstrap sync --serve' to serve again.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			dir, err := a.serveDir()
			if err != nil {
				return &verify.InputError{Err: err}
			}
			st, err := serve.Stop(dir, 5*time.Second)
			if err != nil {
				return err
			}
			return a.printServe(serveStatus{Stopped: st != nil, State: st})
		},
	}
}

// newServeRunCommand is the serving process itself, started detached by
// --serve with the listener on fd 3 and the credentials on stdin.
func newServeRunCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:    "run STATE_DIR",
		Short:  "The serving process (started by --serve; not for direct use)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ln, err := net.FileListener(os.NewFile(3, "listener"))
			if err != nil {
				return fmt.Errorf("serve run: no listener on fd 3 (started by --serve only): %w", err)
			}
			return serve.Run(cmd.Context(), args[0], a.streams.In, ln, a.streams.ErrOut)
		},
	}
}
