package main

import (
	"errors"
	"os"

	"github.com/fluxcd/pkg/ssa"
	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/pkg/agekey"
	"github.com/homelab-ops/bootstrap/pkg/gate"
	"github.com/homelab-ops/bootstrap/pkg/kube"
)

func newAgeKeyCommand(rf *reportFlags) *cobra.Command {
	o := agekey.Options{}
	var keyFile string
	cmd := &cobra.Command{
		Use:   "age-key",
		Short: "Install the SOPS age key Secret after proving it decrypts the environment's files",
		Long: `age-key reads an age identity (never from a flag value), finds the SOPS files that the
environment's Kustomizations decrypt with the Secret (decryption.provider: sops), checks that
the key is one of each file's recipients, test-decrypts each in memory, and only then applies
Secret flux-system/sops-age (data key age.agekey) by server-side apply and reads it back.

The identity comes from --age-key-file PATH, --age-key-file - (stdin), $SOPS_AGE_KEY or
$SOPS_AGE_KEY_FILE, in that order. It is never written to disk, logged or reported.`,
		Example: `  ansible-vault view age.key.vault | bootstrap age-key --age-key-file - --repo . --path clusters/prod -o json
  SOPS_AGE_KEY_FILE=~/.config/sops/age/keys.txt bootstrap age-key --path clusters/dev
  bootstrap age-key --age-key-file new.key --path clusters/dev --rotate
  bootstrap age-key verify --path clusters/dev`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r := gate.NewReport("age-key")
			in := agekey.Input{Flag: keyFile, Stdin: cmd.InOrStdin(), Getenv: os.Getenv}
			err := agekey.Install(cmd.Context(), r, in, o, connector(rf))
			return ageKeyDone(rf, r, err)
		},
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&o.Repo, "repo", ".", "the GitOps repository checkout")
	pf.StringVar(&o.Path, "path", "", "the environment in --repo whose Kustomizations decrypt with the Secret, e.g. clusters/dev (required)")
	pf.StringVar(&o.Namespace, "namespace", agekey.DefaultNamespace, "namespace of the Secret")
	pf.StringVar(&o.SecretName, "secret-name", agekey.DefaultSecretName, "name of the Secret the Kustomizations' decryption.secretRef names")
	fl := cmd.Flags()
	fl.StringVar(&keyFile, "age-key-file", "", "age identity file, or - for stdin (default: $SOPS_AGE_KEY, then $SOPS_AGE_KEY_FILE)")
	fl.BoolVar(&o.Rotate, "rotate", false, "replace a Secret that holds different identities")
	fl.BoolVar(&o.Force, "force", false, "install even when the key decrypts none or not all of the environment's SOPS files")

	cmd.AddCommand(&cobra.Command{
		Use:   "verify",
		Short: "Prove the installed Secret parses, covers and decrypts the environment's SOPS files",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r := gate.NewReport("age-key verify")
			err := agekey.Verify(cmd.Context(), r, o, connector(rf))
			return ageKeyDone(rf, r, err)
		},
	})
	return cmd
}

// connector opens the cluster only when a command gets that far.
func connector(rf *reportFlags) agekey.Connect {
	return func() (client.Client, *ssa.ResourceManager, error) {
		cfg, err := kube.Config(rf.kube)
		if err != nil {
			return nil, nil, gate.InputErrorf("%v", err)
		}
		c, err := kube.Client(cfg)
		if err != nil {
			return nil, nil, err
		}
		return c, kube.ResourceManager(c), nil
	}
}

// ageKeyDone redacts anything that looks like key material from the
// report and the error, then reports as every command does.
func ageKeyDone(rf *reportFlags, r *gate.Report, err error) error {
	if err != nil {
		msg := agekey.Redact(err.Error())
		if gate.IsInput(err) {
			err = gate.InputErrorf("%s", msg)
		} else {
			err = errors.New(msg)
		}
		agekey.RedactReport(r)
		return fail(rf, r, err)
	}
	agekey.RedactReport(r)
	return finish(rf, r)
}
