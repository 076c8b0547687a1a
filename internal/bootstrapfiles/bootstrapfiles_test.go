package bootstrapfiles

import (
	"testing"
)

func TestDump(t *testing.T) {
	for _, l := range []string{"taskfile", "helmfile", "operator"} {
		b, err := Read("../../testdata/layouts/" + l)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range b.Evidence() {
			t.Log(e)
		}
		t.Log(b.Files)
	}
}
