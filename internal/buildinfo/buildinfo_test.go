package buildinfo

import (
	"bytes"
	"errors"
	"reflect"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFrom(t *testing.T) {
	stamped := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/homelab-ops/bootstrap", Version: "v0.3.0"},
		Settings: []debug.BuildSetting{
			{Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "arm64"},
			{Key: "vcs.revision", Value: "0123456789abcdef"},
			{Key: "vcs.time", Value: "2026-12-01T10:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	devel := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}
	// Out of order on purpose: lexical order would put v2.10.0 first.
	embedded := []string{"v2.9.5", "v2.10.0", "v2.2.3"}
	tests := []struct {
		name     string
		bi       *debug.BuildInfo
		ld       Stamp
		embedErr error
		want     Info
		text     []string
	}{
		{
			name: "module version and VCS from the build info",
			bi:   stamped,
			want: Info{Version: "v0.3.0", VersionSource: "buildinfo", Commit: "0123456789abcdef", CommitTime: "2026-12-01T10:00:00Z", Modified: true,
				GoVersion: "go1.26.8", Platform: "linux/arm64",
				Flux: Flux{Default: "v2.9.5", Oldest: "v2.2.3", Newest: "v2.10.0", Embedded: []string{"v2.2.3", "v2.9.5", "v2.10.0"}}},
			text: []string{"bootstrap v0.3.0\n", "0123456789abcdef (modified", "go1.26.8 linux/arm64", "v2.2.3 … v2.10.0 embedded (3 releases), default v2.9.5"},
		},
		{
			name: "ldflags version wins; build info commit kept over the ldflags one",
			bi:   stamped,
			ld:   Stamp{Version: "v1.0.0", Commit: "ffff"},
			want: Info{Version: "v1.0.0", VersionSource: "ldflags", Commit: "0123456789abcdef", CommitTime: "2026-12-01T10:00:00Z", Modified: true,
				GoVersion: "go1.26.8", Platform: "linux/arm64",
				Flux: Flux{Default: "v2.9.5", Oldest: "v2.2.3", Newest: "v2.10.0", Embedded: []string{"v2.2.3", "v2.9.5", "v2.10.0"}}},
			text: []string{"bootstrap v1.0.0\n"},
		},
		{
			name: "devel build in a worktree: the ldflags commit fills in",
			bi:   devel,
			ld:   Stamp{Commit: "abcd"},
			want: Info{Version: "(devel)", VersionSource: "none", Commit: "abcd", GoVersion: "go1.26.8",
				Flux: Flux{Default: "v2.9.5", Oldest: "v2.2.3", Newest: "v2.10.0", Embedded: []string{"v2.2.3", "v2.9.5", "v2.10.0"}}},
			text: []string{"bootstrap (devel)\n", "commit:   abcd\n"},
		},
		{
			name:     "no build info, no bundles",
			embedErr: errors.New("built without the embedded Flux bundles"),
			want:     Info{Version: "(devel)", VersionSource: "none", Flux: Flux{Default: "v2.9.5", Embedded: []string{}, Missing: "built without the embedded Flux bundles"}},
			text:     []string{"commit:   unknown (built without VCS", "flux:     none embedded (default v2.9.5): built without the embedded Flux bundles"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list := embedded
			if tt.embedErr != nil {
				list = nil
			}
			got := From(tt.bi, tt.ld, list, tt.embedErr, "v2.9.5")
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("From:\n got %+v\nwant %+v", got, tt.want)
			}
			var b bytes.Buffer
			if err := got.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			for _, s := range tt.text {
				if !strings.Contains(b.String(), s) {
					t.Errorf("text lacks %q:\n%s", s, b.String())
				}
			}
		})
	}
	if embedded[0] != "v2.9.5" {
		t.Error("From sorted its caller's slice")
	}
}

// TestRead: the test binary carries build info (Go version at least), and
// the ldflags variables are empty in it.
func TestRead(t *testing.T) {
	got := Read([]string{"v2.9.5"}, nil, "v2.9.5")
	if got.GoVersion == "" || !strings.HasPrefix(got.GoVersion, "go") {
		t.Errorf("GoVersion %q: want the toolchain's", got.GoVersion)
	}
	if got.Flux.Oldest != "v2.9.5" || got.Flux.Newest != "v2.9.5" {
		t.Errorf("Flux %+v", got.Flux)
	}
}
