package fluxrelease

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/versions"
)

// FuzzResolve: a release or range as a repository declares it (a
// FluxInstance spec.distribution.version, a tag, a header), with or
// without an operator artifact from the pinned table: resolve and refusal
// never panic, a release they pick is embedded, Old picks none, and a
// declaration that names nothing says why.
func FuzzResolve(f *testing.F) {
	pins, err := versions.Load()
	if err != nil {
		f.Fatal(err)
	}
	o := Options{Default: pins.FluxVersion, Embedded: pins.EmbeddedFluxVersions, OperatorMaxFlux: pins.OperatorMaxFlux}
	artifacts := []string{""}
	for a := range o.OperatorMaxFlux {
		artifacts = append(artifacts, a)
	}
	slices.Sort(artifacts)
	// Seeds: every version: field of testdata/ and the forms the tests use.
	re := regexp.MustCompile(`(?m)(?:version|ref=|Flux Version|tag|semver):\s*"?([^"\n]+)`)
	_ = filepath.WalkDir("../../testdata", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil {
			for _, m := range re.FindAllSubmatch(b, -1) {
				f.Add(string(m[1]), true, true, uint8(0))
			}
		}
		return nil
	})
	for _, s := range []string{"2.x", "2.7.x", ">=2.3.0 <2.5.0", "*", "v2.2.2", "v2.10.0", "0.x", "two", ">=2.3 <2.0 || &&", "~2.3 >=2.4", "^2.3 >=2.12", "v3.0.0", "${FLUX_VERSION}"} {
		f.Add(s, true, true, uint8(1))
		f.Add(s, false, false, uint8(0))
	}
	f.Fuzz(func(t *testing.T, value string, rangeOf, operator bool, artifact uint8) {
		d := declaration{value: value, rangeOf: rangeOf, operator: operator}
		if a := artifacts[int(artifact)%len(artifacts)]; a != "" {
			d.artifact, d.maxFlux = a, o.OperatorMaxFlux[a]
		}
		v, old, note := d.resolve(o)
		switch {
		case v != "" && !slices.Contains(o.Embedded, v):
			t.Fatalf("resolve(%q) = %q, not embedded", value, v)
		case v != "" && old:
			t.Fatalf("resolve(%q) = %q and old", value, v)
		case v == "" && !old && note == "":
			t.Fatalf("resolve(%q) names no release and says not why", value)
		}
		if r := d.refusal(); (r.why == "") != (r.fix == "") {
			t.Fatalf("refusal(%q) = %+v: a verdict without its fix, or the reverse", value, r)
		}
		_ = rangeFloor(value)
	})
}

// FuzzVersionsParse: versions.env as read by --versions-file: Parse never
// panics, and a document it accepts names the release and the embedded
// ones, none empty.
func FuzzVersionsParse(f *testing.F) {
	if b, err := os.ReadFile("../../versions.env"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("FLUX_VERSION=v2.4.0\nFLUX_EMBEDDED_VERSIONS=v2.4.0, ,v2.3.0\nFLUX_BUNDLE_MODULE=m\nFLUX_BUNDLE_MODULE_VERSION=v1\nFLUX_BUNDLE_MODULE_SUM=h1:x\n"))
	f.Add([]byte("export A='b\nc'\n# x\nB=\"${A}\"\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := versions.Parse(b)
		if err != nil {
			return
		}
		if p.FluxVersion == "" || len(p.EmbeddedFluxVersions) == 0 {
			t.Fatalf("Parse(%q) accepted without FLUX_VERSION or embedded releases: %+v", b, p)
		}
		if slices.Contains(p.EmbeddedFluxVersions, "") {
			t.Fatalf("Parse(%q) lists an empty embedded release", b)
		}
	})
}
