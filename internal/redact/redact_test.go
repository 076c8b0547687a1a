package redact

import (
	"strings"
	"testing"

	"filippo.io/age"
)

func TestAgeIdentities(t *testing.T) {
	// A fresh identity: no private key is ever committed.
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	key := id.String()
	for _, tc := range []struct{ in, want string }{
		{"key " + key + " leaked", "key [redacted age identity] leaked"},
		{"lower case " + strings.ToLower(key) + " too", "lower case [redacted age identity] too"},
		{"a recipient age1qqqq is public", "a recipient age1qqqq is public"},
		{"nothing here", "nothing here"},
	} {
		if got := AgeIdentities(tc.in); got != tc.want {
			t.Errorf("AgeIdentities(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
