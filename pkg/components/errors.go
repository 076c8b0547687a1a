package components

import (
	"fmt"
	"strings"
)

// OptionError is an Options field Generate or Preflight refuses: its value
// is not one the field allows. errors.As finds it through %w wrapping, so a
// command line can name its own flag for Field.
type OptionError struct {
	// Field is the Options field: "LogLevel", "FluxVersion" (a version not
	// embedded, with Bundle nil) or "Components" (Components and
	// ComponentsExtra together).
	Field string
	// Value is the refused value; for Components, the unknown components
	// joined with ", ", or "" when none is selected.
	Value string
	// Allowed are the values the field takes: the log levels, the embedded
	// versions, or the bundle's components.
	Allowed []string
	// Origin names the bundle whose components Allowed lists ("" for the
	// other fields).
	Origin string
	// Reason, when set, is the whole refusal (for a field whose value is
	// not one of a list).
	Reason string
}

// Error says which field refused which value and what it allows.
func (e *OptionError) Error() string {
	allowed := strings.Join(e.Allowed, ", ")
	switch {
	case e.Reason != "":
		return fmt.Sprintf("Options.%s %s", e.Field, e.Reason)
	case e.Field == "FluxVersion":
		return fmt.Sprintf("Options.FluxVersion: Flux %s is not embedded in this build (embedded: %s); pick one of those or give Options.Bundle", e.Value, allowed)
	case e.Field == "Components" && e.Value == "":
		return fmt.Sprintf("Options.Components: no components selected; available in %s: %s", e.Origin, allowed)
	case e.Field == "Components":
		return fmt.Sprintf("Options.Components/ComponentsExtra: unknown component %s; available in %s: %s", e.Value, e.Origin, allowed)
	}
	return fmt.Sprintf("Options.%s %q is not one of %s", e.Field, e.Value, allowed)
}

// BundleError is a bundle that cannot be read as a Flux release bundle: a
// tarball that does not unpack (Err), or files missing from it (Missing).
type BundleError struct {
	// Origin names the bundle, as given to NewBundle or ExtractBundle.
	Origin string
	// Missing are the files a release bundle has and this one lacks.
	Missing []string
	// Err is why the bundle could not be read, when Missing is empty.
	Err error
}

// Error names the bundle and what is wrong with it.
func (e *BundleError) Error() string {
	if len(e.Missing) == 0 {
		return fmt.Sprintf("%s: %v", e.Origin, e.Err)
	}
	return fmt.Sprintf("%s is not a Flux release bundle: missing %s; expected the contents of a Flux release's manifests.tar.gz (<component>.yaml for each controller, rbac.yaml, policies.yaml)",
		e.Origin, strings.Join(e.Missing, ", "))
}

// Unwrap returns Err.
func (e *BundleError) Unwrap() error { return e.Err }
