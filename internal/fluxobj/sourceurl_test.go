package fluxobj

import "testing"

// TestSameSourceURL: two spellings of one repository are one source, a
// different owner, repository, host, port or scheme another.
func TestSameSourceURL(t *testing.T) {
	t.Parallel()
	const base = "https://git.example.invalid/owner/home-ops.git"
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{base, base, true},
		{base, "https://git.example.invalid/owner/home-ops", true},
		{base, "https://git.example.invalid/owner/home-ops/", true},
		{base, "https://git.example.invalid/owner/home-ops.git/", true},
		{base, "HTTPS://Git.Example.Invalid/owner/home-ops", true},
		{base, "https://git.example.invalid:443/owner/home-ops", true},
		{base, "  https://git.example.invalid/owner/home-ops  ", true},
		{"http://git.lan/o/r", "http://git.lan:80/o/r.git", true},
		{"ssh://git@github.com/owner/repo", "git@github.com:owner/repo", true},
		{"ssh://git@github.com/owner/repo.git", "git@github.com:owner/repo.git", true},
		{"ssh://git@github.com:22/owner/repo", "git@github.com:owner/repo", true},
		{"ssh://git@github.com/owner/repo", "ssh://github.com/owner/repo", true},
		{"oci://ghcr.io/owner/manifests", "oci://GHCR.io/owner/manifests", true},
		// Another repository.
		{base, "https://git.example.invalid/owner/other.git", false},
		{base, "https://git.example.invalid/other/home-ops.git", false},
		{base, "https://git.example.invalid/owner/Home-Ops.git", false}, // the path is case-sensitive
		{base, "https://other.example.invalid/owner/home-ops.git", false},
		{base, "https://git.example.invalid:8443/owner/home-ops.git", false},
		{base, "http://git.example.invalid/owner/home-ops.git", false},
		{base, "ssh://git@git.example.invalid/owner/home-ops.git", false},
		{"ssh://git@github.com:2222/owner/repo", "git@github.com:owner/repo", false},
		{"oci://ghcr.io/owner/manifests", "oci://ghcr.io/owner/other", false},
		// Nothing is no repository.
		{"", "", false},
		{"not a url", "not a url", false},
		{base, "", false},
	} {
		if got := SameSourceURL(tc.a, tc.b); got != tc.same {
			t.Errorf("SameSourceURL(%q, %q) = %v, want %v (%q, %q)", tc.a, tc.b, got, tc.same, SourceURL(tc.a), SourceURL(tc.b))
		}
		if got := SameSourceURL(tc.b, tc.a); got != tc.same {
			t.Errorf("SameSourceURL(%q, %q) = %v, want %v: not symmetric", tc.b, tc.a, got, tc.same)
		}
	}
}
