package diff

import (
	"bytes"
	"context"
	"testing"
)

// TestDiffBuildReuseSame: every golden fixture's diff (text and JSON) is
// the same with head's builds taken from base where their inputs answer
// the same (the default) and with every build run at both revisions.
func TestDiffBuildReuseSame(t *testing.T) {
	for _, tc := range goldenCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			repo := tc.repo(t)
			out := func(noReuse bool) string {
				res, err := Run(context.Background(), Options{Repo: repo, Base: "HEAD~1", Head: "HEAD", FluxVersion: tc.flux, noBuildReuse: noReuse})
				if err != nil {
					t.Fatal(err)
				}
				var b bytes.Buffer
				if err := WriteText(&b, res); err != nil {
					t.Fatal(err)
				}
				if err := WriteJSON(&b, res); err != nil {
					t.Fatal(err)
				}
				return normalize(b.String())
			}
			if with, without := out(false), out(true); with != without {
				t.Errorf("with build reuse:\n%s\nwithout:\n%s", with, without)
			}
		})
	}
}
