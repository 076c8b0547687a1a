package main

import (
	"errors"

	"github.com/spf13/pflag"

	"github.com/homelab-ops/bootstrap/internal/flow"
	"github.com/homelab-ops/bootstrap/internal/gate"
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
	fl.StringVar(&f.srcURL, "source-url", "", "point the GitRepository at this temporary source (cold bring-up) until 'bootstrap cutover'")
	fl.StringVar(&f.srcBranch, "source-branch", "", "branch of the temporary source (default: the declared ref)")
	fl.StringVar(&f.srcSecret, "source-secret", "", "Secret with the temporary source's credentials (default: none)")
	f.serve.add(fl)
}

// validate checks the flags and their combinations before anything is
// read; env is the environment, with the root's namespace.
func (f *syncFlags) validate(env rootsync.Options) error {
	if f.srcURL == "" && (f.srcBranch != "" || f.srcSecret != "") {
		return gate.InputErrorf("--source-branch and --source-secret need --source-url")
	}
	return errors.Join(rootsync.ValidateSync(rootsync.RunOptions{Build: env}, f.srcURL, f.srcSecret), f.serve.validate(f.srcURL))
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
