package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/buildinfo"
	"github.com/homelab-ops/bootstrap/internal/versions"
)

// TestVersionCommand: version prints the tool's own version, the Go version
// and the embedded Flux range, as text and as one JSON document; versions
// still prints versions.env; a bad -o is a usage error.
func TestVersionCommand(t *testing.T) {
	t.Parallel()
	pins, err := versions.Load()
	if err != nil {
		t.Fatal(err)
	}
	first, last := pins.EmbeddedFluxVersions[0], pins.EmbeddedFluxVersions[len(pins.EmbeddedFluxVersions)-1]
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string
	}{
		{"text", []string{"version"}, 0, []string{"bootstrap ", "\ngo:       go", first + " … " + last + " embedded", "default " + pins.FluxVersion}},
		{"versions keeps versions.env", []string{"versions"}, 0, []string{"FLUX_VERSION=" + pins.FluxVersion}},
		{"bad output", []string{"version", "-o", "yaml"}, 2, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, tt.args...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tt.code, r.stdout, r.stderr)
			}
			for _, s := range tt.stdout {
				if !strings.Contains(r.stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, r.stdout)
				}
			}
		})
	}

	r := runCLI(t, "version", "-o", "json")
	if r.code != 0 {
		t.Fatalf("version -o json: exit %d\n%s", r.code, r.stderr)
	}
	var info buildinfo.Info
	if err := json.Unmarshal([]byte(r.stdout), &info); err != nil {
		t.Fatalf("version -o json is not one JSON document: %v\n%s", err, r.stdout)
	}
	if info.Version == "" || !strings.HasPrefix(info.GoVersion, "go") || info.Flux.Oldest != first || info.Flux.Newest != last ||
		info.Flux.Default != pins.FluxVersion || len(info.Flux.Embedded) != len(pins.EmbeddedFluxVersions) {
		t.Errorf("version -o json: %+v", info)
	}
}
