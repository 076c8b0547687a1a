package main

import (
	"github.com/spf13/cobra"

	"github.com/homelab-ops/bootstrap/internal/agekey"
	"github.com/homelab-ops/bootstrap/internal/input"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
)

// ageKeyFlags are age-key's flags: the phase's options, the environment
// (repoFlags) and where the identity comes from (--age-key-file).
type ageKeyFlags struct {
	o       agekey.Options
	rf      repoFlags
	keyFile string
}

func newAgeKeyCommand(a *app) *cobra.Command {
	f := &ageKeyFlags{}
	o, rf := &f.o, &f.rf
	cmd := &cobra.Command{
		Use:   "age-key",
		Short: "Install the SOPS age key Secret after proving it decrypts the environment's files",
		Long: `age-key reads an age identity (never from a flag value), finds the SOPS files that the
environment's Kustomizations decrypt with the Secret (decryption.provider: sops), checks that
the key is one of each file's recipients, test-decrypts each in memory, and only then applies
Secret flux-system/sops-age (data key age.agekey) by server-side apply and reads it back.

The identity comes from --age-key-file PATH, --age-key-file - (stdin), $SOPS_AGE_KEY or
$SOPS_AGE_KEY_FILE, in that order. It is never written to disk, logged or reported.`,
		Example: `  ansible-vault view age.key.vault | bootstrap age-key --age-key-file - --repo . --env prod -o json
  SOPS_AGE_KEY_FILE=~/.config/sops/age/keys.txt bootstrap age-key --path clusters/dev
  bootstrap age-key --age-key-file new.key --env dev --rotate
  bootstrap age-key verify --env dev`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			run := a.s.NewRun("age-key", false)
			a.s.Writes("age-key", o.Namespace, false)
			in := agekey.Input{Flag: f.keyFile, Stdin: a.streams.In, Getenv: a.getenv}
			return a.ageKey(cmd, run, rf, o, func(o agekey.Options) pipeline.Phase { return agekey.NewInstallPhase(in, o, a.s.AgeKeyConnect) })
		},
	}
	pf := cmd.PersistentFlags()
	rf.add(pf)
	pf.Var(input.NewNamespace(&o.Namespace, agekey.DefaultNamespace), "namespace", "namespace of the Secret")
	pf.Var(input.NewName(&o.SecretName, agekey.DefaultSecretName, "age key Secret"), "secret-name", "name of the Secret the Kustomizations' decryption.secretRef names")
	fl := cmd.Flags()
	fl.StringVar(&f.keyFile, "age-key-file", "", "age identity file, or - for stdin (default: $SOPS_AGE_KEY, then $SOPS_AGE_KEY_FILE)")
	fl.BoolVar(&o.Rotate, "rotate", false, "replace a Secret that holds different identities")
	fl.BoolVar(&o.Force, "force", false, forceUsage+forceAgeKey)

	cmd.AddCommand(&cobra.Command{
		Use:   "verify",
		Short: "Prove the installed Secret parses, covers and decrypts the environment's SOPS files",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			run := a.s.NewRun("age-key verify", false)
			return a.ageKey(cmd, run, rf, o, func(o agekey.Options) pipeline.Phase { return agekey.NewVerifyPhase(o, a.s.AgeKeyConnect) })
		},
	})
	return cmd
}

// ageKey runs an age-key phase and reports.
func (a *app) ageKey(cmd *cobra.Command, run *pipeline.Run, rf *repoFlags, o *agekey.Options, phase func(agekey.Options) pipeline.Phase) error {
	o.Repo = rf.repo
	var err error
	if o.Path, err = rf.resolve(); err != nil {
		return a.s.Fail(cmd.Context(), run.Report, err)
	}
	// The session redacts key material from the report, the error included.
	return a.s.Execute(cmd.Context(), run, phase(*o))
}
