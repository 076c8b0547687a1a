// Package redact holds the rule that keeps secret key material out of
// everything the tool prints or writes: the age identity pattern. The
// package that handles age keys (agekey) and the one that writes reports
// (session) both use it, so the report writer does not depend on the key
// handling.
package redact

import "regexp"

// agePattern matches any age identity text, whatever its case.
var agePattern = regexp.MustCompile(`(?i)AGE-SECRET-KEY-[0-9A-Z-]*`)

// AgeIdentities replaces anything that looks like an age identity. It is
// the last line of defence before text leaves the process; the code that
// reads keys never puts key material in messages in the first place.
func AgeIdentities(s string) string {
	return agePattern.ReplaceAllString(s, "[redacted age identity]")
}
