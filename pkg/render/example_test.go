package render_test

import (
	"context"
	"fmt"
	"log"

	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/resid"

	"github.com/homelab-ops/bootstrap/pkg/components/bundles"
	"github.com/homelab-ops/bootstrap/pkg/render"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// strict is the repository's overlays/strict-substitution.yaml as an inline
// patch: append (never replace) a --feature-gates arg to kustomize-controller.
var strict = types.Patch{
	Target: &types.Selector{ResId: resid.NewResIdKindOnly("Deployment", "kustomize-controller")},
	Patch: `- op: add
  path: /spec/template/spec/containers/0/args/-
  value: --feature-gates=StrictPostBuildSubstitutions=true`,
}

// Render Flux v2.4.0, whose kustomize-controller (v1.4.0) defaults
// StrictPostBuildSubstitutions off, with the strict-substitution patch, and
// print the proofs.
func Example() {
	bundle, err := bundles.Open("v2.4.0")
	if err != nil {
		log.Fatal(err)
	}
	o := render.DefaultOptions("v2.4.0", bundle)
	o.Patches = []types.Patch{strict}
	res, err := render.Render(context.Background(), o)
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range res.Checks {
		fmt.Println(c.Verdict, c.ID)
	}
	r := verify.NewReport("render")
	r.Add(res.Checks...)
	fmt.Println("verdict", r.Verdict())
	// Output:
	// pass render.components
	// pass overlay.patch-landed/1
	// pass overlay.args-preserved
	// pass controllers.strict-substitution
	// pass overlay.feature-gates
	// verdict pass
}

// What kustomize-controller's StrictPostBuildSubstitutions is after the
// render, with and without the patch.
func ExampleResult_EffectiveGate() {
	bundle, err := bundles.Open("v2.4.0")
	if err != nil {
		log.Fatal(err)
	}
	for _, ps := range [][]types.Patch{nil, {strict}} {
		o := render.DefaultOptions("v2.4.0", bundle)
		o.Components = []string{"source-controller", "kustomize-controller"}
		o.Patches = ps
		res, err := render.Render(context.Background(), o)
		if err != nil {
			log.Fatal(err)
		}
		g, err := res.EffectiveGate("kustomize-controller", "StrictPostBuildSubstitutions")
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("kustomize-controller %s: value %t, explicit %t, default %t\n", g.Version, g.Value, g.Explicit, g.Default)
	}
	// Output:
	// kustomize-controller v1.4.0: value false, explicit false, default false
	// kustomize-controller v1.4.0: value true, explicit true, default false
}
