// Command render-strict renders Flux v2.4.0 with the strict-substitution
// overlay (StrictPostBuildSubstitutions=true on kustomize-controller) through
// the public API, github.com/homelab-ops/bootstrap/pkg/render, and prints
// the proofs. It exits 1 when a proof fails, 2 on bad input.
//
//	go run ./examples/render-strict                  # the patch below
//	go run ./examples/render-strict -overlays DIR    # a kustomization with patches
//	go run ./examples/render-strict -o gotk.yaml     # also write the render
//
// It imports only pkg/... of this module: it is what a program outside the
// module can do.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/resid"

	"github.com/homelab-ops/bootstrap/pkg/components/bundles"
	"github.com/homelab-ops/bootstrap/pkg/render"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// strict is the repository's overlays/strict-substitution.yaml: append
// (never replace) a --feature-gates arg to kustomize-controller.
var strict = types.Patch{
	Target: &types.Selector{ResId: resid.NewResIdKindOnly("Deployment", "kustomize-controller")},
	Patch: `- op: add
  path: /spec/template/spec/containers/0/args/-
  value: --feature-gates=StrictPostBuildSubstitutions=true`,
}

func main() { os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("render-strict", flag.ContinueOnError)
	fl.SetOutput(stderr)
	version := fl.String("flux-version", "v2.4.0", "embedded Flux release to render")
	overlays := fl.String("overlays", "", "overlay directory (a kustomization.yaml with patches:) instead of the built-in strict patch")
	out := fl.String("o", "", "write the render to this file")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	bundle, err := bundles.Open(*version)
	if err != nil {
		fmt.Fprintln(stderr, "render-strict:", err)
		return 2
	}
	o := render.DefaultOptions(*version, bundle)
	if *overlays != "" {
		o.Overlays = os.DirFS(*overlays)
	} else {
		o.Patches = []types.Patch{strict}
	}
	res, err := render.Render(ctx, o)
	if err != nil {
		fmt.Fprintln(stderr, "render-strict:", err)
		return 2
	}
	failed := false
	for _, c := range res.Checks {
		fmt.Fprintf(stdout, "%-5s %s: %s\n", c.Verdict, c.ID, c.Message)
		failed = failed || c.Verdict == verify.Fail
	}
	g, err := res.EffectiveGate("kustomize-controller", "StrictPostBuildSubstitutions")
	if err != nil {
		fmt.Fprintln(stderr, "render-strict:", err)
		return 2
	}
	fmt.Fprintf(stdout, "kustomize-controller %s: StrictPostBuildSubstitutions=%t (explicit %t, default %t)\n", g.Version, g.Value, g.Explicit, g.Default)
	if *out != "" {
		if err := os.WriteFile(*out, res.YAML, 0o644); err != nil {
			fmt.Fprintln(stderr, "render-strict:", err)
			return 2
		}
	}
	if failed {
		fmt.Fprintln(stderr, "render-strict: a proof failed: do not apply this render")
		return 1
	}
	return 0
}
