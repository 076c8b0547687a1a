package check

import (
	"fmt"
	"slices"
	"strings"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// wantFinding is a finding a test requires of a check: one of detector
// det whose line (as the report writes it, without the detector's tag)
// holds text — its location and what users read. The detector is
// identified by Findings[].Detector, never by a "[det]" tag in the text
// (issue 48 item 3).
type wantFinding struct {
	det  verify.Detector
	text string
}

func (w wantFinding) String() string { return fmt.Sprintf("a %s finding holding %q", w.det, w.text) }

// findingLine is f as the report's evidence writes it (finding.String),
// less its "[detector]" tag: "file:line: message (n occurrence(s) on
// line(s) …) — fix: … — policy".
func findingLine(f verify.Finding) string {
	s := f.Message
	if loc := f.Location(); loc != "" {
		s = loc + ": " + s
	}
	return s + findingTail(f)
}

// hasFinding: c has a finding of det whose line holds text.
func hasFinding(c verify.Check, det verify.Detector, text string) bool {
	return slices.ContainsFunc(c.Findings, func(f verify.Finding) bool {
		return f.Detector == det && strings.Contains(findingLine(f), text)
	})
}

// hasDetector: c has a finding of det.
func hasDetector(c verify.Check, det verify.Detector) bool {
	return slices.ContainsFunc(c.Findings, func(f verify.Finding) bool { return f.Detector == det })
}

// holds: c has a finding of det whose line holds want, or (det "") c's
// message or evidence holds want.
func holds(c verify.Check, det verify.Detector, want string) bool {
	if det == "" {
		return strings.Contains(text(c), want)
	}
	return hasFinding(c, det, want)
}
