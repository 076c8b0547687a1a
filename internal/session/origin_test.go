package session

import (
	"io"
	"testing"
)

// TestOrigin: the origin of a flag the environment set is read back typed,
// a flag it did not set is the command line's, and every report says the
// origins as facts in the words it always used.
func TestOrigin(t *testing.T) {
	t.Parallel()
	s := New(io.Discard, io.Discard, func(string) string { return "" }, nil)
	s.Origins = []Origin{
		{Flag: "flux-version", Value: "v2.6.4", From: "FLUX_VERSION in versions.env"},
		{Flag: "namespace", Value: "flux", From: "BOOTSTRAP_NAMESPACE"},
	}
	for _, tc := range []struct{ flag, want string }{
		{"flux-version", "FLUX_VERSION in versions.env"},
		{"namespace", "BOOTSTRAP_NAMESPACE"},
		{"root", "--root"},       // not noted: the command line
		{"flux", "--flux"},       // a prefix of a noted flag is not it
		{"version", "--version"}, // nor a suffix
	} {
		if got := s.FlagOrigin(tc.flag); got != tc.want {
			t.Errorf("FlagOrigin(%q) = %q, want %q", tc.flag, got, tc.want)
		}
	}
	facts := s.NewRun("test", false).Report.Facts
	if got, want := facts["environment.1"], "--flux-version v2.6.4 (from FLUX_VERSION in versions.env)"; got != want {
		t.Errorf("environment.1 = %q, want %q", got, want)
	}
	if got, want := facts["environment.2"], "--namespace flux (from BOOTSTRAP_NAMESPACE)"; got != want {
		t.Errorf("environment.2 = %q, want %q", got, want)
	}
}
