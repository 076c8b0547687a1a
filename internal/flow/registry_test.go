package flow

import (
	"slices"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/converge"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/internal/rootsync"
)

func phaseNames(ps []pipeline.Phase) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name())
	}
	return out
}

// TestStatusOrder: status's phases in their order, the age-key phase only
// with an environment, the converge graph the repository's then.
func TestStatusOrder(t *testing.T) {
	built, err := rootsync.Build(homelab)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		env  *rootsync.Render
		want []string
	}{
		{"cluster alone", nil, []string{"controllers", "sync", "converge", "status"}},
		{"with an environment", built, []string{"controllers", "age-key", "sync", "converge", "status"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Status(StatusOptions{Env: tt.env, Converge: converge.DefaultOptions()})
			if n := phaseNames(got); !slices.Equal(n, tt.want) {
				t.Errorf("phases %v, want %v", n, tt.want)
			}
		})
	}
}

// TestEveryHoldsEachPhase: the registry docgen reads names every phase a
// command assembles (a phase missing from it would leave its gates out of
// the reference).
func TestEveryHoldsEachPhase(t *testing.T) {
	every := phaseNames(Every())
	for _, name := range []string{"static", "inputs", "controllers", "age-key", "sync", "cutover", "converge", "status"} {
		if !slices.Contains(every, name) {
			t.Errorf("Every() has no phase %q: %v", name, every)
		}
	}
}
