package agekey

import (
	"context"
	"fmt"
	"strings"

	"github.com/fluxcd/pkg/ssa"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/pkg/gate"
)

// Options of both subcommands.
type Options struct {
	// Repo is the GitOps repository checkout; Path the environment in it.
	Repo, Path string
	// Namespace and SecretName locate the Secret.
	Namespace, SecretName string
	// Rotate allows replacing different identities; Force installs a key
	// that decrypts none (or not all) of the environment's files.
	Rotate, Force bool
}

// Connect opens the cluster lazily: the gates before it run offline.
type Connect func() (client.Client, *ssa.ResourceManager, error)

func (o *Options) defaults() {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.SecretName == "" {
		o.SecretName = DefaultSecretName
	}
	if o.Repo == "" {
		o.Repo = "."
	}
}

// Install is `bootstrap age-key`: read and parse the identity, match and
// test-decrypt the environment's files, and only then apply the Secret and
// prove the installed Secret decrypts them. An input error is returned
// (exit 2); every gate lands in r.
func Install(ctx context.Context, r *gate.Report, in Input, o Options, connect Connect) error {
	o.defaults()
	if o.Path == "" {
		return gate.InputErrorf("--path is required: the environment whose files the key must decrypt, e.g. --path clusters/dev")
	}
	ids, err := Read(in)
	if err != nil {
		return err
	}
	scope, err := Scan(o.Repo, o.Path, o.Namespace, o.SecretName)
	if err != nil {
		return err
	}
	r.Facts["secret"] = o.Namespace + "/" + o.SecretName
	r.Facts["recipients"] = strings.Join(ids.Recipients(), ",")
	r.Add(IdentityChecks(ids)...)
	checks, decrypted := RepositoryChecks(ids, scope, gate.Before, o.Force)
	r.Add(checks...)
	r.Facts["decrypted"] = fmt.Sprintf("%d/%d", decrypted, len(scope.Files))

	blocked := 0
	for _, c := range r.Checks {
		if c.Verdict == gate.Fail || (c.Verdict == gate.Skip && !c.Optional) {
			blocked++
		}
	}
	if blocked > 0 {
		r.Add(gate.Check{ID: "age-key.secret-applied", Phase: Phase, Stage: gate.After, Title: "Secret " + o.Namespace + "/" + o.SecretName + " is applied",
			Verdict: gate.Skip, Message: fmt.Sprintf("not installed: %d gate%s before it did not pass; nothing was changed (fix them, or pass --force to install anyway)", blocked, plural(blocked, "", "s"))})
		return nil
	}

	c, rm, err := connect()
	if err != nil {
		return err
	}
	ins, changed, err := InstallSecret(ctx, c, rm, ids, InstallOptions{Namespace: o.Namespace, Name: o.SecretName, Rotate: o.Rotate})
	r.Add(ins...)
	r.Changed = changed
	if err != nil {
		return err
	}
	for _, ck := range ins {
		if ck.Verdict == gate.Fail {
			return nil
		}
	}

	// After: the live Secret, read back, decrypts what the input did.
	ck, live := ReadSecret(ctx, c, o.Namespace, o.SecretName, ids)
	r.Add(ck)
	if live == nil {
		return nil
	}
	after, n := RepositoryChecks(live, scope, gate.After, o.Force)
	sum := gate.Check{ID: "age-key.installed-decrypts", Phase: Phase, Stage: gate.After, Title: "the installed Secret decrypts the environment",
		Verdict: gate.Pass, Message: fmt.Sprintf("the installed Secret decrypts %d/%d SOPS file%s under %s", n, len(scope.Files), plural(len(scope.Files), "", "s"), scope.Env)}
	for _, a := range after {
		if a.Verdict == gate.Fail || a.Verdict == gate.Skip {
			sum.Verdict = a.Verdict
			sum.Message = "the installed Secret: " + a.Message
			break
		}
	}
	if sum.Verdict == gate.Pass && n < len(scope.Files) {
		sum.Verdict = gate.Warn // only under --force
	}
	if len(scope.Files) == 0 {
		sum.Verdict, sum.Message = gate.Warn, "the installed Secret parses; there is no SOPS file to prove it on (--force)"
	}
	r.Add(sum)
	return nil
}

// Verify is `bootstrap age-key verify`, the after-gate on its own: the
// Secret exists and parses, its recipients cover the environment's SOPS
// files, and it decrypts them.
func Verify(ctx context.Context, r *gate.Report, o Options, connect Connect) error {
	o.defaults()
	if o.Path == "" {
		return gate.InputErrorf("--path is required: the environment whose files the Secret must decrypt, e.g. --path clusters/dev")
	}
	scope, err := Scan(o.Repo, o.Path, o.Namespace, o.SecretName)
	if err != nil {
		return err
	}
	r.Facts["secret"] = o.Namespace + "/" + o.SecretName
	c, _, err := connect()
	if err != nil {
		return err
	}
	ck, live := ReadSecret(ctx, c, o.Namespace, o.SecretName, nil)
	r.Add(ck)
	if live == nil {
		return nil
	}
	r.Facts["recipients"] = strings.Join(live.Recipients(), ",")
	checks, n := RepositoryChecks(live, scope, gate.After, false)
	r.Add(checks...)
	r.Facts["decrypted"] = fmt.Sprintf("%d/%d", n, len(scope.Files))
	return nil
}
