package main

import (
	"errors"

	"github.com/spf13/pflag"

	"github.com/homelab-ops/bootstrap/internal/flow"
	"github.com/homelab-ops/bootstrap/internal/gate"
	"github.com/homelab-ops/bootstrap/internal/input"
	"github.com/homelab-ops/bootstrap/internal/rootsync"
)

// syncFlags are the flags up and sync share, defined once: the offline
// check first (with its --compare and --no-compare), the temporary source
// (--source-*, or --serve and its flags) and --cutover-when-ready.
type syncFlags struct {
	withCheck                    bool
	static                       flow.Static
	srcURL, srcBranch, srcSecret string
	serve                        serveFlags
}

func (f *syncFlags) add(fl *pflag.FlagSet) {
	fl.BoolVar(&f.withCheck, "check", true, "run 'bootstrap check' of the environment first (phase static); --check=false skips it, with a warning")
	addCompareFlags(fl, &f.static.Compare, &f.static.NoCompare, "static: ")
	fl.Var(input.NewGitURL(&f.srcURL), "source-url", "point the GitRepository at this temporary source (cold bring-up) until 'bootstrap cutover'")
	fl.StringVar(&f.srcBranch, "source-branch", "", "branch of the temporary source (default: the declared ref)")
	fl.Var(input.NewOptionalName(&f.srcSecret, "Secret with the temporary source's credentials"), "source-secret", "Secret with the temporary source's credentials (default: none)")
	f.serve.add(fl)
}

// validate checks the flags and their combinations before anything is
// read; env is the environment, with the root's namespace. A flag given
// that would have no effect is refused, naming what it needs.
func (f *syncFlags) validate(fl *pflag.FlagSet, env rootsync.Options) error {
	if f.srcURL == "" && (f.srcBranch != "" || f.srcSecret != "") {
		return gate.InputErrorf("--source-branch and --source-secret need --source-url")
	}
	if f.serve.whenReady && input.Given(fl, "cutover-when-ready") && f.srcURL == "" && f.serve.addr == "" {
		return gate.InputErrorf("--cutover-when-ready needs a temporary source to cut over from: add --serve (this machine serves the checkout) or --source-url URL")
	}
	if !f.withCheck && (input.Given(fl, "compare") || input.Given(fl, "no-compare")) {
		return gate.InputErrorf("--compare and --no-compare are phase static's and need it: drop --check=false")
	}
	return errors.Join(rootsync.ValidateSync(rootsync.RunOptions{Build: env}, f.srcURL, f.srcSecret), f.serve.validate(fl, f.srcURL))
}

// staticOptions are phase static's options (nil: --check=false).
func (f *syncFlags) staticOptions() *flow.Static {
	if !f.withCheck {
		return nil
	}
	o := f.static
	return &o
}

// sync is the sync phase's options and what follows it: the temporary
// source (--source-url or --serve) and --cutover-when-ready.
func (f *syncFlags) sync(getenv func(string) string) *flow.Sync {
	s := &flow.Sync{Serve: f.serve.options(getenv), CutoverWhenReady: f.serve.whenReady, CutoverWait: f.serve.cutoverWait}
	if f.srcURL != "" {
		s.Source = &rootsync.Temporary{URL: f.srcURL, Branch: f.srcBranch, Secret: f.srcSecret}
	}
	return s
}
