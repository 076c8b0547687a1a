package main

import (
	"errors"
	"fmt"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/flow"
	"github.com/homelab-ops/bootstrap/internal/fluxrelease"
	"github.com/homelab-ops/bootstrap/pkg/components"
	"github.com/homelab-ops/bootstrap/pkg/components/bundles"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// TestFlagError: pkg/components' typed refusals are said with the flags
// that set what was refused, as input errors (exit 2); a refusal of the
// run's release keeps the release; anything else passes unchanged.
func TestFlagError(t *testing.T) {
	t.Parallel()
	unknown := &components.OptionError{Field: "Components", Value: "nope", Allowed: []string{"a", "b"}, Origin: "bundle B"}
	rel := fluxrelease.Release{From: fluxrelease.FromDefault, Version: "v2.3.0"}
	other := errors.New("connection refused")
	for _, tc := range []struct {
		name  string
		err   error
		want  string // "" for nil
		input bool
	}{
		{"nil", nil, "", false},
		{"another error", other, "connection refused", false},
		{"log level", &components.OptionError{Field: "LogLevel", Value: "verbose", Allowed: components.LogLevels},
			`--log-level "verbose" is not one of debug, info, error`, true},
		{"version not embedded", &components.OptionError{Field: "FluxVersion", Value: "v9.9.9", Allowed: []string{"v2.4.0", "v2.9.5"}},
			"Flux v9.9.9 is not embedded in this build (embedded: v2.4.0, v2.9.5); pick one of those with --flux-version, or pass --manifests DIR|TARBALL with that release's manifests", true},
		{"an option with a reason keeps the library's words", &components.OptionError{Field: "FluxVersion", Reason: "is empty"},
			"Options.FluxVersion is empty", true},
		{"no components", &components.OptionError{Field: "Components", Allowed: []string{"a", "b"}, Origin: "bundle B"},
			"--components: no components selected; available in bundle B: a, b", true},
		{"unknown component", unknown,
			"--components/--components-extra: unknown component nope; available in bundle B: a, b", true},
		{"not a bundle", &components.BundleError{Origin: "directory d", Missing: []string{"rbac.yaml"}},
			"directory d is not a Flux release bundle: missing rbac.yaml; expected the contents of a Flux release's manifests.tar.gz (<component>.yaml for each controller, rbac.yaml, policies.yaml)", true},
		{"no embedded bundles, as pkg/components wraps it", fmt.Errorf("no embedded Flux release bundles; give Options.Bundle: %w", bundles.ErrNotGenerated),
			"this binary was built without the embedded Flux bundles (pkg/components/bundles/flux, committed: restore it with git, or run make generate) and rebuild, or pass --manifests DIR|TARBALL (" + bundles.ErrNotGenerated.Error() + ")", false},
		{"the run's release refuses a component", &verify.InputError{Err: &flow.ReleaseRefusal{Release: rel, Err: unknown}},
			"Flux v2.3.0 (the default: the repository declares no release): --components/--components-extra: unknown component nope; available in bundle B: a, b", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := flagError(tc.err)
			if tc.want == "" {
				if got != nil {
					t.Fatalf("flagError(nil) = %v", got)
				}
				return
			}
			if got == nil || got.Error() != tc.want {
				t.Fatalf("flagError:\n got %v\nwant %s", got, tc.want)
			}
			if verify.IsInput(got) != tc.input {
				t.Errorf("input error %t, want %t", verify.IsInput(got), tc.input)
			}
			if errors.Is(tc.err, bundles.ErrNotGenerated) && !errors.Is(got, bundles.ErrNotGenerated) {
				t.Error("errors.Is(bundles.ErrNotGenerated) no longer holds")
			}
		})
	}
}
