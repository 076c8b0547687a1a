// Package bootstrap holds the files the tool carries inside its binary: the
// pinned versions and the controller overlays this repository ships.
package bootstrap

import "embed"

// VersionsEnv is versions.env, the single source of pinned versions.
//
//go:embed versions.env
var VersionsEnv []byte

// Overlays is the overlays/ directory: the controller customizations applied
// by default.
//
//go:embed overlays
var Overlays embed.FS
