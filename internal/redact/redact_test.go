package redact

import "testing"

func TestAgeIdentities(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"key AGE-SECRET-KEY-1QQQQZZZ9 leaked", "key [redacted age identity] leaked"},
		{"lower case age-secret-key-1qqqq too", "lower case [redacted age identity] too"},
		{"a recipient age1qqqq is public", "a recipient age1qqqq is public"},
		{"nothing here", "nothing here"},
	} {
		if got := AgeIdentities(tc.in); got != tc.want {
			t.Errorf("AgeIdentities(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
