package benchshape

import (
	"os"
	"testing"
)

// TestWrite writes the shape and checks its figures. With
// BOOTSTRAP_BENCH_REPO set to a new directory it writes there instead,
// for timing the whole command: bootstrap check --repo $BOOTSTRAP_BENCH_REPO.
func TestWrite(t *testing.T) {
	dir := os.Getenv("BOOTSTRAP_BENCH_REPO")
	if dir == "" {
		dir = t.TempDir()
	} else if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		t.Fatalf("%s is not empty", dir)
	}
	st, err := Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", st)
	if st.Files != 1100 {
		t.Errorf("%d files, want 1,100", st.Files)
	}
	if st.Kustomizations < 130 || st.Kustomizations > 150 {
		t.Errorf("%d Kustomizations in the first cluster, want about 140", st.Kustomizations)
	}
}
