package main

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/homelab-ops/bootstrap/internal/input"
	"github.com/homelab-ops/bootstrap/internal/session"
	"github.com/homelab-ops/bootstrap/internal/versions"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// scriptAliases are the homelab script's environment variables, honoured
// for the flags they meant: the play that set them needs no rewrite.
var scriptAliases = []struct {
	env, flag string
	value     func(string) (string, bool)
}{
	{"FLUX_VERSION", "flux-version", fluxVersion},
	{"FLUX_NAMESPACE", "namespace", keep},
	{"FLUX_COMPONENTS_EXTRA", "components-extra", keep},
	{"FLUX_INSTALL_PLAIN", "plain", func(v string) (string, bool) { return "true", v == "1" || v == "true" }},
}

func keep(v string) (string, bool) { return v, v != "" }

// fluxVersion accepts 2.4.0 as the script's versions.env writes it.
func fluxVersion(v string) (string, bool) {
	if v == "" {
		return "", false
	}
	if !strings.HasPrefix(v, "v") {
		v = "v" + v
	}
	return v, true
}

// envName is a flag's BOOTSTRAP_ variable: --flux-version → BOOTSTRAP_FLUX_VERSION.
func envName(flag string) string {
	return "BOOTSTRAP_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// applyEnvironment sets every flag the command line did not set from, in
// order: --versions-file (the Flux version only), BOOTSTRAP_<FLAG>, then
// the script's aliases. Each value taken from outside the command line is
// noted, so the report says where a setting came from.
func (a *app) applyEnvironment(cmd *cobra.Command) error {
	fl := cmd.Flags()
	// The environment is ambient (input.Given); --versions-file is named
	// on the command line.
	set := func(setter func(*pflag.FlagSet, string, string, string) error, name, value, from string) error {
		f := fl.Lookup(name)
		if f == nil || f.Changed {
			return nil
		}
		if err := setter(fl, name, value, from); err != nil {
			return err
		}
		if name != "age-key-file" { // a path, but keep key plumbing out of reports
			a.s.Origins = append(a.s.Origins, session.Origin{Flag: name, Value: value, From: from})
		}
		return nil
	}
	if a.versionsFile != "" {
		env, err := versions.ReadFile(a.versionsFile)
		if err != nil {
			return verify.InputErrorf("--versions-file: %w", err)
		}
		v, ok := fluxVersion(env["FLUX_VERSION"])
		if !ok {
			return verify.InputErrorf("--versions-file %s has no FLUX_VERSION=… line", a.versionsFile)
		}
		if err := set(input.Set, "flux-version", v, "FLUX_VERSION in "+a.versionsFile); err != nil {
			return err
		}
	}
	var err error
	fl.VisitAll(func(f *pflag.Flag) {
		if v := a.getenv(envName(f.Name)); v != "" && err == nil {
			err = set(input.SetFromEnvironment, f.Name, v, envName(f.Name))
		}
	})
	if err != nil {
		return err
	}
	for _, al := range scriptAliases {
		if v, ok := al.value(a.getenv(al.env)); ok {
			if err := set(input.SetFromEnvironment, al.flag, v, al.env+" (the bootstrap script's variable)"); err != nil {
				return err
			}
		}
	}
	return nil
}
