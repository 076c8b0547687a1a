package main

import (
	"os"
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/pkg/agekey"
	"github.com/homelab-ops/bootstrap/pkg/check"
	"github.com/homelab-ops/bootstrap/pkg/controllers"
	"github.com/homelab-ops/bootstrap/pkg/converge"
	"github.com/homelab-ops/bootstrap/pkg/gate"
	"github.com/homelab-ops/bootstrap/pkg/pipeline"
	"github.com/homelab-ops/bootstrap/pkg/rootsync"
)

// everyPhase is one of each phase a command can run, for the tests that
// look at every gate.
func everyPhase() []pipeline.Phase {
	return []pipeline.Phase{
		controllers.NewPhase(controllers.Options{}, nil),
		agekey.NewInstallPhase(agekey.Input{}, agekey.Options{}, nil),
		agekey.NewVerifyPhase(agekey.Options{}, nil),
		rootsync.NewPhase(rootsync.RunOptions{}, nil),
		rootsync.NewCutoverPhase(rootsync.CutoverOptions{}, nil),
		rootsync.NewWhenReadyPhase(rootsync.WhenReadyOptions{}, nil),
		&check.Phase{},
		converge.NewPhase(nil, converge.Options{}),
	}
}

// TestREADMEListsEveryGate fails when a gate is declared but the README's
// gate tables do not name it.
func TestREADMEListsEveryGate(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	seen := map[string]bool{}
	for _, p := range everyPhase() {
		for _, d := range p.Gates() {
			if seen[d.ID] {
				continue
			}
			seen[d.ID] = true
			want := "`" + d.ID
			if d.Prefix {
				want += "/"
			} else {
				want += "`"
			}
			if !strings.Contains(readme, want) {
				t.Errorf("README.md does not list gate %s (%s, %s/%s): add it to the phase's gate table", d.ID, d.Title, d.Phase, d.Stage)
			}
		}
	}
	if len(seen) < 20 {
		t.Fatalf("only %d gates found: the phase list is incomplete", len(seen))
	}
}

// TestGateIDsUnique fails when two gates of different phases share an ID.
func TestGateIDsUnique(t *testing.T) {
	owner := map[string]gate.Def{}
	for _, p := range everyPhase() {
		for _, d := range p.Gates() {
			if o, ok := owner[d.ID]; ok && o.Phase != d.Phase {
				t.Errorf("gate %s declared by phases %s and %s", d.ID, o.Phase, d.Phase)
			}
			owner[d.ID] = d
		}
	}
}

// TestREADMEInputRules fails when a flag with an input rule is missing
// from the README's "Input rules" table.
func TestREADMEInputRules(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rules, ok := strings.Cut(string(b), "## Input rules")
	if !ok {
		t.Fatal(`README.md has no "## Input rules" section`)
	}
	rules, _, _ = strings.Cut(rules, "\n## ")
	for _, flag := range []string{"--namespace", "--secret-name", "--source-secret", "--source`", "--root", "--image-pull-secret",
		"--cluster-domain", "--registry", "--toleration-keys", "--timeout", "--source-url", "--to`", "--components", "--output-dir",
		"--manifests", "--overlays", "--repo", "--kubeconfig", "--age-key-file"} {
		if !strings.Contains(rules, flag) {
			t.Errorf("README.md's Input rules do not mention %s", strings.TrimSuffix(flag, "`"))
		}
	}
	for _, code := range []string{"| 130 |", "| 143 |"} {
		if !strings.Contains(string(b), code) {
			t.Errorf("README.md's exit-code table lacks %s", code)
		}
	}
}
