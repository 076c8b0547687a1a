package bootstrapfiles

import (
	"testing"
)

func TestDump(t *testing.T) {
	b, err := Read("../../testdata/layouts/taskfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range b.Evidence() {
		t.Log(e)
	}
	t.Log(b.Files)
}
