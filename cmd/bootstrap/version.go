package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	bootstrap "github.com/homelab-ops/bootstrap"
	"github.com/homelab-ops/bootstrap/internal/buildinfo"
	"github.com/homelab-ops/bootstrap/pkg/components"
)

func newVersionsCommand(_ *app) *cobra.Command {
	return &cobra.Command{
		Use:   "versions",
		Short: "Print the pinned versions this build was made with (versions.env)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(cmd.OutOrStdout(), string(bootstrap.VersionsEnv))
			return err
		},
	}
}

func newVersionCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print this binary's own version, commit, Go version and embedded Flux releases",
		Long: `version prints which build of bootstrap this is: its version (set by a release
build with -ldflags, else the module version Go recorded from the VCS), the commit
it was built from and whether the tree was modified, the Go toolchain, and the
range of Flux releases embedded in it with the default one.

On stdout, in both formats; -o json prints one JSON document for scripts.
The pinned versions (versions.env) are printed by bootstrap versions.`,
		Example: `  bootstrap version
  bootstrap version -o json | jq -r .version`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			embedded, err := components.EmbeddedVersions()
			info := buildinfo.Read(embedded, err, a.pins.FluxVersion)
			if a.s.Output.Format == "json" {
				e := json.NewEncoder(cmd.OutOrStdout())
				e.SetIndent("", "  ")
				return e.Encode(info)
			}
			return info.WriteText(cmd.OutOrStdout())
		},
	}
}
