package patches_test

import (
	"context"
	"fmt"
	"log"

	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/resid"

	"github.com/homelab-ops/bootstrap/pkg/components"
	"github.com/homelab-ops/bootstrap/pkg/patches"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// Apply the strict-substitution patch to the embedded Flux v2.4.0 render
// and prove it: kustomize-controller v1.4.0 defaults
// StrictPostBuildSubstitutions off, so only the patch turns it on.
func Example() {
	r, err := components.Generate(context.Background(), components.DefaultOptions("v2.4.0"))
	if err != nil {
		log.Fatal(err)
	}
	ov, err := patches.InlineOverlay([]types.Patch{{
		Target: &types.Selector{ResId: resid.NewResIdKindOnly("Deployment", "kustomize-controller")},
		Patch: `- op: add
  path: /spec/template/spec/containers/0/args/-
  value: --feature-gates=StrictPostBuildSubstitutions=true`,
	}}, "strict")
	if err != nil {
		log.Fatal(err)
	}
	res, err := patches.Apply(r.YAML, ov)
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range patches.Prove(res, false) {
		fmt.Println(c.Verdict, c.ID)
	}
	// Output:
	// pass overlay.patch-landed/1
	// pass overlay.args-preserved
	// pass controllers.strict-substitution
	// pass overlay.feature-gates
}

// The gate as kustomize-controller v1.4.0 reads its args.
func ExampleEffectiveGate() {
	f, err := patches.ParseArgs([]string{"--feature-gates=StrictPostBuildSubstitutions=true"})
	if err != nil {
		log.Fatal(err)
	}
	g := patches.EffectiveGate("kustomize-controller", "v1.4.0", f, patches.StrictSubstitution)
	fmt.Printf("value %t, explicit %t, default %t\n", g.Value, g.Explicit, g.Default)
	// Output:
	// value true, explicit true, default false
}

// A command line proves a render it made without the overlays (its
// --plain) and names its own flag in the proofs; the zero Phrases would
// say "a plain render".
func ExamplePhrases() {
	r, err := components.Generate(context.Background(), components.DefaultOptions("v2.4.0"))
	if err != nil {
		log.Fatal(err)
	}
	res, err := patches.Apply(r.YAML, &patches.Overlay{Name: "(none)"})
	if err != nil {
		log.Fatal(err)
	}
	words := patches.Phrases{Plain: "--plain"}
	for _, c := range words.Prove(res, true) {
		if c.Verdict != verify.Pass {
			fmt.Println(c.Verdict, c.ID+":", c.Message)
		}
	}
	// Output:
	// warn overlay.plain: --plain: the controller overlays were skipped on purpose; the controllers are rendered exactly as `flux install` renders them
	// warn controllers.strict-substitution: StrictPostBuildSubstitutions=false: --plain skipped the overlays and kustomize-controller v1.4.0 defaults it off; an undefined ${VAR} will render as an empty string
}
