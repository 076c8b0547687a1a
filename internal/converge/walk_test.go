package converge

import (
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// TestWalkSelected: Walk, as cutover and sync use it, walks exactly the
// live Kustomizations Select keeps (b) and what they depend on (a, and
// flux-system, which has no root of its own here) — and its nudges converge a chain that a
// controller with no requeue of its own would leave blocked (the negative
// control: the same walk without nudges times out, a failing and b skipped).
func TestWalkSelected(t *testing.T) {
	const root = "converge.node/flux-system/flux-system"
	for _, tc := range []struct {
		name  string
		nudge bool
		want  map[string]verify.Verdict
	}{
		{"nudged", true, map[string]verify.Verdict{root: verify.Pass, "converge.node/flux-system/a": verify.Pass, "converge.node/flux-system/b": verify.Pass}},
		{"not nudged", false, map[string]verify.Verdict{root: verify.Pass, "converge.node/flux-system/a": verify.Fail, "converge.node/flux-system/b": verify.Skip}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl, ctx, stop := phaseWorld(t, nil)
			defer stop()
			o := DefaultOptions()
			o.Nudge, o.Timeout = tc.nudge, 3*time.Second
			o.Select = func(k *kustomizev1.Kustomization) bool { return k.Name == "b" }
			var lines []string
			checks, facts, err := Walk(ctx, cl, o, func(l string) { lines = append(lines, l) })
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]verify.Verdict{}
			for _, c := range checks {
				if strings.HasPrefix(c.ID, GateNode.ID+"/") {
					got[c.ID] = c.Verdict
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("nodes walked %v, want %v\n%+v\n%s", got, tc.want, checks, strings.Join(lines, "\n"))
			}
			for id, v := range tc.want {
				if got[id] != v {
					t.Fatalf("%s: %s, want %s\n%s", id, got[id], v, strings.Join(lines, "\n"))
				}
			}
			if bad := Unconverged(checks); tc.nudge != (len(bad) == 0) {
				t.Fatalf("unconverged %v", bad)
			}
			if tc.nudge && facts["converge.nudges"] != "2" {
				t.Fatalf("facts %v: want 2 nudges (a, then b)", facts)
			}
		})
	}
}
