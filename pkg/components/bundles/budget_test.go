package bundles

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
)

// sizeBudget caps the bytes the committed bundles embed. They are committed
// (docs/development.md, "Flux release bundles"), so every byte is paid in
// three places: the module zip `go get`/`go install` download (the go
// command refuses one over 500 MB; we stay far below that), the bootstrap
// binary (each byte embedded is a byte of it), and every clone's history
// (a release is never removed from history once committed). 30 releases take
// about 14.5 MiB; 20 MiB leaves room for roughly ten more. Over it, decide rather
// than raise the number: drop the oldest releases from FLUX_EMBEDDED_VERSIONS
// (versions.env), or move the bundles to a separately versioned module.
const sizeBudget = 20 << 20

// embeddedSize sums the regular files under fsys's root.
func embeddedSize(fsys fs.FS) (files int, bytes int64, err error) {
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		files++
		bytes += info.Size()
		return nil
	})
	return files, bytes, err
}

// checkBudget fails when the embedded bytes exceed budget, saying why there
// is a budget and what to do.
func checkBudget(fsys fs.FS, budget int64) error {
	files, size, err := embeddedSize(fsys)
	if err != nil {
		return err
	}
	if size > budget {
		return fmt.Errorf("the embedded Flux bundles take %d bytes in %d files (%.1f MiB), over the %.1f MiB budget: "+
			"they are committed, so each byte grows every clone's history, the module zip `go install` downloads (limit 500 MB) and the binary; "+
			"drop the oldest releases from FLUX_EMBEDDED_VERSIONS in versions.env and run make generate, or move the bundles to a separately versioned module (docs/development.md, \"Flux release bundles\")",
			size, files, float64(size)/(1<<20), float64(budget)/(1<<20))
	}
	return nil
}

// TestSizeBudget: the bundles this package embeds stay under sizeBudget.
func TestSizeBudget(t *testing.T) {
	files, size, err := embeddedSize(embedded)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("embedded: %d files, %d bytes (%.1f MiB of a %.1f MiB budget)", files, size, float64(size)/(1<<20), float64(sizeBudget)/(1<<20))
	if err := checkBudget(embedded, sizeBudget); err != nil {
		t.Fatal(err)
	}
}

// TestSizeBudgetFails: a tree over the budget fails, and the message says why.
func TestSizeBudgetFails(t *testing.T) {
	fsys := fstest.MapFS{"flux/v2.4.0/rbac.yaml": {Data: make([]byte, 101)}, "flux/README.md": {Data: []byte("x")}}
	tests := []struct {
		budget int64
		fails  bool
	}{{102, false}, {101, true}, {200, false}}
	for _, tt := range tests {
		err := checkBudget(fsys, tt.budget)
		if (err != nil) != tt.fails {
			t.Errorf("budget %d: err = %v, want failure %v", tt.budget, err, tt.fails)
		}
	}
	err := checkBudget(fsys, 50)
	for _, want := range []string{"102 bytes in 2 files", "500 MB", "FLUX_EMBEDDED_VERSIONS"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}
