package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/homelab-ops/bootstrap/internal/customize"
	"github.com/homelab-ops/bootstrap/internal/flow"
	"github.com/homelab-ops/bootstrap/internal/fluxrelease"
	"github.com/homelab-ops/bootstrap/internal/input"
	"github.com/homelab-ops/bootstrap/internal/safeio"
	"github.com/homelab-ops/bootstrap/internal/versions"
	"github.com/homelab-ops/bootstrap/pkg/components"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// renderFlags are the flags of every command that renders the components.
type renderFlags struct {
	components components.Options
	manifests  string
	overlays   string
	plain      bool
	fl         *pflag.FlagSet
}

func addRenderFlags(cmd *cobra.Command, f *renderFlags, pins versions.Pins) {
	f.components = components.DefaultOptions(pins.FluxVersion)
	fl := cmd.Flags()
	f.fl = fl
	c := &f.components
	fl.StringVar(&c.FluxVersion, "flux-version", c.FluxVersion, "Flux release to render (embedded: "+strings.Join(pins.EmbeddedFluxVersions, ", ")+")")
	fl.StringVar(&f.manifests, "manifests", "", "render from this directory or manifests.tar.gz instead of the embedded bundle")
	fl.StringSliceVar(&c.Components, "components", c.Components, "controllers to install")
	fl.StringSliceVar(&c.ComponentsExtra, "components-extra", nil, "additional controllers, e.g. image-reflector-controller,image-automation-controller")
	fl.Var(input.NewNamespace(&c.Namespace, c.Namespace), "namespace", "namespace to install Flux in")
	fl.Var(input.NewRegistry(&c.Registry, c.Registry), "registry", "container registry to pull the controller images from")
	fl.Var(input.NewOptionalName(&c.ImagePullSecret, "image pull Secret"), "image-pull-secret", "name of the Secret the controllers pull images with")
	fl.BoolVar(&c.NetworkPolicy, "network-policy", c.NetworkPolicy, "deny ingress to the Flux namespace from other namespaces")
	fl.BoolVar(&c.WatchAllNamespaces, "watch-all-namespaces", c.WatchAllNamespaces, "watch custom resources in all namespaces")
	fl.Var(input.NewClusterDomain(&c.ClusterDomain, c.ClusterDomain), "cluster-domain", "the cluster's DNS domain")
	fl.Var(input.NewTolerationKeys(&c.TolerationKeys), "toleration-keys", "taint keys the controllers tolerate")
	fl.StringVar(&c.LogLevel, "log-level", c.LogLevel, "controller log level: "+strings.Join(components.LogLevels, ", "))
	fl.StringVar(&f.overlays, "overlays", "", "overlay directory (a kustomization with patches:); default: the overlays built into this binary")
	fl.BoolVar(&f.plain, "plain", false, "skip the overlays on purpose (reported as a warning in every report)")
}

// options resolves the flags into render options: which flags were given,
// and their conflicts, are settled here; the render only learns which
// customization to apply.
func (f *renderFlags) options() (customize.Options, error) {
	// The values' own rules ran when they were set (internal/input); the
	// version and components are checked against the embedded bundle here,
	// before the first read or request (a refusal the session says with
	// the flags: flagError).
	o := customize.Options{Components: f.components, Manifests: f.manifests, Phrases: proofPhrases}
	if err := customize.Preflight(o); err != nil {
		return o, err
	}
	if f.plain && input.Given(f.fl, "plain") && input.Given(f.fl, "overlays") {
		return o, verify.InputErrorf("--overlays has no effect with --plain, which skips the overlays: drop one of them")
	}
	if f.overlays == "" {
		src, err := customize.Builtin()
		if f.plain {
			src.Kind = customize.SourceNone
		}
		o.Overlays = src
		return o, err
	}
	d, err := safeio.OpenDir(f.overlays, "--overlays "+f.overlays)
	if err != nil {
		return o, verify.InputErrorf("%w; point it at a directory holding kustomization.yaml", err)
	}
	o.Overlays = customize.Source{Kind: customize.SourceDir, FS: d, Name: f.overlays}
	if f.plain {
		// --overlays and --plain, one of them from --config or the
		// environment: --plain skips the overlays.
		o.Overlays.Kind = customize.SourceNone
	}
	return o, nil
}

// manifestFile is the file --output-dir writes, as `flux install --export` names it.
const manifestFile = "gotk-components.yaml"

// checkOutputDir refuses, before rendering, an --output-dir that is a file,
// and -o json without one (the manifests would have nowhere to go).
func checkOutputDir(dir, format string) error {
	if dir == "" {
		if format == "json" {
			return verify.InputErrorf("-o json prints the report on stdout, so the manifests need a place of their own: pass --output-dir DIR (they go to DIR/%s)", manifestFile)
		}
		return nil
	}
	fi, err := os.Stat(dir)
	switch {
	case err == nil && !fi.IsDir():
		return verify.InputErrorf("--output-dir %s is not a directory: pass a directory (it gets %s; a missing one is created)", dir, manifestFile)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return verify.InputErrorf("--output-dir %s: %w", dir, err)
	}
	return nil
}

func newRenderCommand(a *app) *cobra.Command {
	f := &renderFlags{}
	var outDir string
	cmd := &cobra.Command{
		Use:   "render",
		Short: "Print the Flux components with the controller overlays applied, and prove the overlays landed",
		Example: `  bootstrap render > gotk-components.yaml
  bootstrap render --flux-version v2.4.0 --components-extra image-reflector-controller,image-automation-controller
  bootstrap render --overlays ./my-overlays --output-dir out/ -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			run := a.s.NewRun("render", false)
			if err := checkOutputDir(outDir, a.s.Output.Format); err != nil {
				return a.s.Fail(cmd.Context(), run.Report, err)
			}
			opts, err := f.options()
			if err != nil {
				return a.s.Fail(cmd.Context(), run.Report, err)
			}
			phase := customize.NewPhase(opts)
			return a.s.ExecuteThen(cmd.Context(), run, func() error { return a.writeManifests(run.Report, phase, outDir) }, phase)
		},
	}
	addRenderFlags(cmd, f, a.pins)
	cmd.Flags().Var(input.NewOutputDir(&outDir), "output-dir", "write "+manifestFile+" into this directory instead of stdout (needed with -o json)")
	return cmd
}

// writeManifests writes the render to --output-dir, or to stdout in text
// mode. Fail closed: a render whose overlays did not prove out is not
// written, so a pipe into an apply cannot ship it.
func (a *app) writeManifests(r *verify.Report, phase *customize.Phase, outDir string) error {
	if r.Verdict() == verify.Fail {
		return nil
	}
	yaml := phase.Output.YAML
	if outDir == "" {
		if a.s.Output.Format != "text" {
			return nil
		}
		_, err := a.streams.Out.Write(yaml)
		return err
	}
	p := filepath.Join(outDir, manifestFile)
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return fmt.Errorf("--output-dir %s: %w", outDir, err)
	}
	if err := os.WriteFile(p, yaml, 0o644); err != nil {
		return fmt.Errorf("--output-dir %s: %w", outDir, err)
	}
	r.Facts["manifests"] = p
	return nil
}

// releaseFromRepository rewrites --flux-version's help on a command that
// reads an environment (up, controllers with --repo/--env, status): the
// release then defaults to the one the repository declares, as check's.
func releaseFromRepository(cmd *cobra.Command, pins versions.Pins, what string) {
	f := cmd.Flags().Lookup("flux-version")
	f.Usage = fmt.Sprintf("Flux release to %s (embedded: %s); default: the release the environment's repository declares, as check resolves it, else the pinned one", what, strings.Join(pins.EmbeddedFluxVersions, ", "))
}

// releaseChoice is --flux-version when it was set (on the command line,
// by --versions-file or the environment), and where it came from; the
// zero Choice lets the run take the release the repository declares.
func (a *app) releaseChoice(fl *pflag.FlagSet) flow.Choice {
	f := fl.Lookup("flux-version")
	if f == nil || !f.Changed {
		return flow.Choice{}
	}
	return flow.Choice{FluxVersion: f.Value.String(), From: a.flagOrigin("flux-version")}
}

// releaseLine prints the run's release as the plan's first line.
func (a *app) releaseLine(rel *fluxrelease.Release) {
	if rel != nil {
		a.s.Line(rel.Line())
	}
}
