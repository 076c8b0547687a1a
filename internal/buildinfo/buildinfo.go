// Package buildinfo says which build of bootstrap is running: its own
// version and commit, the Go toolchain that built it and the Flux releases
// embedded in it. `bootstrap version` prints it.
package buildinfo

import (
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strings"

	"golang.org/x/mod/semver"
)

// version and commit are set by a release build (make dist):
//
//	go build -ldflags "-X github.com/homelab-ops/bootstrap/internal/buildinfo.version=v1.2.3 \
//	  -X github.com/homelab-ops/bootstrap/internal/buildinfo.commit=$(git rev-parse HEAD)"
//
// version wins over the module version in the build info, which a build
// from a checkout only knows from the VCS (a pseudo-version, or "(devel)").
// commit is used when the build info has no vcs.revision: Go stamps VCS
// information only where .git is a directory (cmd/go/internal/vcs, vcsGit's
// RootNames), so a build in a git worktree or from a source archive has none.
var version, commit string

// Stamp is what -ldflags -X set in a binary.
type Stamp struct {
	Version, Commit string
}

// Info is what a binary says about itself.
type Info struct {
	// Version is the tool's own version: the -ldflags value, else the main
	// module's version from the build info, else "(devel)".
	Version string `json:"version"`
	// VersionSource says where Version came from: ldflags, buildinfo or none.
	VersionSource string `json:"versionSource"`
	// Commit is the VCS revision the binary was built from ("" when the
	// build recorded none: go run, go test, -buildvcs=false, a git worktree
	// without -ldflags).
	Commit string `json:"commit,omitempty"`
	// CommitTime is the commit's time (RFC 3339) as the VCS recorded it; it
	// is the commit's, not the build's, so a rebuild gives the same binary.
	CommitTime string `json:"commitTime,omitempty"`
	// Modified is true when the work tree had uncommitted changes.
	Modified bool `json:"modified,omitempty"`
	// GoVersion is the toolchain that built the binary.
	GoVersion string `json:"goVersion"`
	// Platform is GOOS/GOARCH of the binary.
	Platform string `json:"platform,omitempty"`
	// Flux is the range of embedded Flux releases.
	Flux Flux `json:"flux"`
}

// Flux is the range of Flux releases a build embeds.
type Flux struct {
	// Default is the release rendered when no --flux-version is given.
	Default string `json:"default"`
	// Oldest and Newest bound the embedded releases (semver order).
	Oldest string `json:"oldest,omitempty"`
	Newest string `json:"newest,omitempty"`
	// Embedded is every embedded release, oldest first; empty when the
	// binary was built from a tree whose committed bundles were removed.
	Embedded []string `json:"embedded"`
	// Missing says why none are embedded, and how to fix it.
	Missing string `json:"missing,omitempty"`
}

// Read assembles the Info of the running binary. embedded and embedErr are
// pkg/components.EmbeddedVersions' results; fluxDefault is the pinned
// FLUX_VERSION.
func Read(embedded []string, embedErr error, fluxDefault string) Info {
	bi, _ := debug.ReadBuildInfo()
	return From(bi, Stamp{Version: version, Commit: commit}, embedded, embedErr, fluxDefault)
}

// From assembles an Info from build info (nil when the binary has none), the
// -ldflags stamp and the embedded releases.
func From(bi *debug.BuildInfo, ld Stamp, embedded []string, embedErr error, fluxDefault string) Info {
	info := Info{Version: "(devel)", VersionSource: "none", Flux: Flux{Default: fluxDefault, Embedded: []string{}}}
	if bi != nil {
		info.GoVersion = bi.GoVersion
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			info.Version, info.VersionSource = v, "buildinfo"
		}
		var goos, goarch string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Commit = s.Value
			case "vcs.time":
				info.CommitTime = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			case "GOOS":
				goos = s.Value
			case "GOARCH":
				goarch = s.Value
			}
		}
		if goos != "" && goarch != "" {
			info.Platform = goos + "/" + goarch
		}
	}
	if ld.Version != "" {
		info.Version, info.VersionSource = ld.Version, "ldflags"
	}
	if info.Commit == "" {
		info.Commit = ld.Commit
	}
	if embedErr != nil {
		info.Flux.Missing = embedErr.Error()
		return info
	}
	list := slices.Clone(embedded)
	semver.Sort(list)
	if len(list) == 0 {
		info.Flux.Missing = "no Flux release is embedded: restore pkg/components/bundles/flux (committed) with git, or run make generate, and rebuild"
		return info
	}
	info.Flux.Embedded = list
	info.Flux.Oldest, info.Flux.Newest = list[0], list[len(list)-1]
	return info
}

// WriteText prints the Info for a person, one fact a line.
func (i Info) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "bootstrap %s\n", i.Version)
	commit := i.Commit
	switch {
	case commit == "":
		commit = "unknown (built without VCS information: go run, go test, -buildvcs=false or a git worktree; make dist stamps it)"
	case i.Modified:
		commit += " (modified: built with uncommitted changes)"
	}
	if i.CommitTime != "" && i.Commit != "" {
		commit += ", committed " + i.CommitTime
	}
	fmt.Fprintf(&b, "commit:   %s\n", commit)
	goVersion := i.GoVersion
	if i.Platform != "" {
		goVersion += " " + i.Platform
	}
	fmt.Fprintf(&b, "go:       %s\n", goVersion)
	switch {
	case i.Flux.Missing != "":
		fmt.Fprintf(&b, "flux:     none embedded (default %s): %s\n", i.Flux.Default, i.Flux.Missing)
	default:
		fmt.Fprintf(&b, "flux:     %s … %s embedded (%d releases), default %s\n", i.Flux.Oldest, i.Flux.Newest, len(i.Flux.Embedded), i.Flux.Default)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
