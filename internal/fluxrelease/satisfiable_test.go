package fluxrelease

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestResolveLongRangeIsQuick: a FluxInstance range naming many numbers
// (the repository's to write) is resolved in well under a second; before
// satisfiable was bounded, 20 comparisons took 12 s per call and Resolve
// calls it several times. Short ranges are still decided (TestResolve,
// TestRefusal: "no release at all satisfies the range").
func TestResolveLongRangeIsQuick(t *testing.T) {
	var parts []string
	for i := range 30 {
		parts = append(parts, fmt.Sprintf(">=%d.%d.%d", i*7, i*3, i*5))
	}
	d := declaration{value: strings.Join(parts, " "), rangeOf: true, operator: true}
	start := time.Now()
	_ = d.refusal()
	_, _, _ = d.resolve(Options{Embedded: []string{"v2.2.3", "v2.10.0"}})
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("refusal and resolve of a %d-byte range took %s", len(d.value), took)
	}
	// Still decided: a short range no release satisfies.
	if r := (declaration{value: ">=2.3 <2.0", rangeOf: true, operator: true}).refusal(); !strings.Contains(r.why, "no release at all satisfies") {
		t.Fatalf("refusal(>=2.3 <2.0) = %+v", r)
	}
}
