package main

import (
	"fmt"

	"github.com/spf13/cobra"

	bootstrap "github.com/homelab-ops/bootstrap"
)

func newVersionCommand(_ *app) *cobra.Command {
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
