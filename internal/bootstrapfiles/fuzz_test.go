package bootstrapfiles

import (
	"bytes"
	"os"
	"testing"
)

// FuzzNeutralize: any template text to neutralize: the line count holds
// (every location read after it is the template's own).
func FuzzNeutralize(f *testing.F) {
	if b, err := os.ReadFile("../../testdata/layouts/helmfile/bootstrap/resources.yaml.j2"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("a: {{ x\n}}\n{% if %}{# c\n#}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, _ := neutralize(b)
		if bytes.Count(out, []byte("\n")) != bytes.Count(b, []byte("\n")) {
			t.Fatalf("%q: %d lines, was %d", out, bytes.Count(out, []byte("\n")), bytes.Count(b, []byte("\n")))
		}
	})
}
