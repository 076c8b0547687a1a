package diff

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/benchshape"
)

// A window whose render would be base's is not rendered (rendersAsAtBase):
// the windows found are the same as when every one is rendered — on a knob
// every app of the real shape reads (the shortcut taken); TestDiffSeedWindow
// finds its windows, whose readers' objects change, with it.
func TestWindowShortcutChangesNoWindow(t *testing.T) {
	dir := t.TempDir()
	if _, err := benchshape.Write(dir); err != nil {
		t.Fatal(err)
	}
	commits := commitEach(t, dir, func(edit func(file, old, new string)) {},
		func(edit func(file, old, new string)) {
			edit("kubernetes/flux/vars/cluster-settings.yaml", "Europe/Berlin", "Europe/Paris")
		})
	windowsOf := func(off bool) (string, int64) {
		t.Helper()
		noWindowShortcut = off
		defer func() { noWindowShortcut = false }()
		before := windowShortcuts.Load()
		r, err := Run(context.Background(), Options{Repo: dir, Path: "kubernetes/flux", Base: commits[0], Head: commits[1], AdoptRoot: true})
		if err != nil {
			t.Fatal(err)
		}
		var ws []*Window
		for _, c := range r.Clusters {
			ws = append(ws, c.Windows...)
		}
		b, err := json.Marshal(ws)
		if err != nil {
			t.Fatal(err)
		}
		return string(b), windowShortcuts.Load() - before
	}
	with, taken := windowsOf(false)
	without, notTaken := windowsOf(true)
	if with != without {
		t.Fatalf("windows with the shortcut:\n%s\nwith every window rendered:\n%s", with, without)
	}
	if taken == 0 || notTaken != 0 {
		t.Fatalf("shortcut taken %d times (want > 0), %d times when off (want 0)", taken, notTaken)
	}
}
