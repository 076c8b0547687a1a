package main

import (
	"errors"

	"github.com/spf13/pflag"

	"github.com/homelab-ops/bootstrap/internal/gate"
	"github.com/homelab-ops/bootstrap/internal/rootsync"
)

// syncFlags are the flags up and sync share, defined once: the offline
// check first, the temporary source (--source-*, or --serve and its
// flags) and --cutover-when-ready.
type syncFlags struct {
	withCheck                    bool
	srcURL, srcBranch, srcSecret string
	serve                        serveFlags
}

func (f *syncFlags) add(fl *pflag.FlagSet) {
	fl.BoolVar(&f.withCheck, "check", true, "run 'bootstrap check' of the environment first (phase static); --check=false skips it, with a warning")
	fl.StringVar(&f.srcURL, "source-url", "", "point the GitRepository at this temporary source (cold bring-up) until 'bootstrap cutover'")
	fl.StringVar(&f.srcBranch, "source-branch", "", "branch of the temporary source (default: the declared ref)")
	fl.StringVar(&f.srcSecret, "source-secret", "", "Secret with the temporary source's credentials (default: none)")
	f.serve.add(fl)
}

// validate checks the flags and their combinations before anything is
// read; o carries the root's namespace, name and the timeout.
func (f *syncFlags) validate(o rootsync.RunOptions) error {
	if f.srcURL == "" && (f.srcBranch != "" || f.srcSecret != "") {
		return gate.InputErrorf("--source-branch and --source-secret need --source-url")
	}
	return errors.Join(rootsync.ValidateSync(o, f.srcURL, f.srcSecret), f.serve.validate(f.srcURL))
}

// source is the temporary source --source-url names (nil without it).
func (f *syncFlags) source() *rootsync.Temporary {
	if f.srcURL == "" {
		return nil
	}
	return &rootsync.Temporary{URL: f.srcURL, Branch: f.srcBranch, Secret: f.srcSecret}
}
