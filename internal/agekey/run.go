package agekey

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/fluxcd/pkg/ssa"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/pkg/verify"
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
	// Env is the environment already loaded (up shares sync's); nil: the
	// phase loads Repo/Path.
	Env *fluxrepo.Env
	// IfNeeded (status) passes a missing Secret that nothing in the
	// environment needs: no SOPS file, no Kustomization decrypting with it,
	// every Kustomization's path built. `age-key verify` asks for the
	// Secret itself and leaves it false.
	IfNeeded bool
	// Fallback reads kustomize-controller's --sops-age-secret, asked only
	// when a Kustomization decrypts with provider sops and no secretRef;
	// nil: from the live Deployment in Namespace (up passes the render it
	// applies instead).
	Fallback FallbackSource
}

// scan is the environment's scope, from Env when it is loaded already.
// live is the fallback read when o.Fallback is nil.
func (o *Options) scan(ctx context.Context, live FallbackSource) (*Scope, error) {
	e := o.Env
	if e == nil {
		var err error
		if e, err = fluxrepo.Load(fluxrepo.Options{Repo: o.Repo, Path: o.Path, Namespace: o.Namespace, KeepGoing: true}); err != nil {
			return nil, err
		}
	}
	var fb *Fallback
	var note string
	if needsFallback(e) {
		read := o.Fallback
		if read == nil {
			read = live
		}
		var err error
		fb, err = read(ctx)
		if errors.Is(err, ErrReadLive) {
			fb, err = live(ctx)
		}
		if err != nil {
			fb, note = nil, "kustomize-controller's --sops-age-secret could not be read: "+err.Error()
		}
	}
	s, err := ScopeOf(e, o.SecretName, fb)
	if s != nil && note != "" {
		s.Notes = append(s.Notes, note)
	}
	return s, err
}

// liveFallbackOver is the fallback read from the live Deployment, over the
// phase's connection (made once).
func liveFallbackOver(connect func() (client.Client, error), namespace string) FallbackSource {
	return func(ctx context.Context) (*Fallback, error) {
		c, err := connect()
		if err != nil {
			return nil, err
		}
		return liveFallback(ctx, c, namespace)
	}
}

// Connect opens the cluster lazily: the gates before it need no cluster,
// except to read kustomize-controller's --sops-age-secret when the scope
// needs it and no render gives it.
type Connect func() (client.Client, *ssa.ResourceManager, error)

// conn is a phase's connection, opened once, when first needed.
type conn struct {
	connect Connect
	opened  bool
	c       client.Client
	rm      *ssa.ResourceManager
	err     error
}

func (n *conn) open() (client.Client, *ssa.ResourceManager, error) {
	if !n.opened {
		n.opened = true
		n.c, n.rm, n.err = n.connect()
	}
	return n.c, n.rm, n.err
}

func (n *conn) client() (client.Client, error) {
	c, _, err := n.open()
	return c, err
}

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

// NewInstallPhase is step 2 as a pipeline phase.
func NewInstallPhase(in Input, o Options, connect Connect) *InstallPhase {
	o.defaults()
	return &InstallPhase{in: in, o: o, conn: conn{connect: connect}}
}

// InstallPhase installs the sops-age Secret, proven before and after.
type InstallPhase struct {
	in Input
	o  Options
	conn

	ids   *Identities
	scope *Scope
}

// Name implements pipeline.Phase.
func (p *InstallPhase) Name() string { return PhaseName }

// Gates implements pipeline.Phase.
func (p *InstallPhase) Gates() []verify.Def {
	return []verify.Def{GateIdentity, GateIdentityFileMode, GateScope, GateRecipient, GateDecrypt, GateSopsConfig,
		GateRotation, GateSecretApplied, GateSecret, GateInstalledDecrypts}
}

// Before reads the identity and proves it on the repository, offline.
func (p *InstallPhase) Before(ctx context.Context, run *pipeline.Run) ([]verify.Check, error) {
	o := p.o
	if o.Path == "" {
		return nil, verify.InputErrorf("--path is required: the environment whose files the key must decrypt, e.g. --env dev or --path clusters/dev")
	}
	ids, err := Read(p.in)
	if err != nil {
		return nil, err
	}
	scope, err := o.scan(ctx, liveFallbackOver(p.client, o.Namespace))
	if err != nil {
		return nil, err
	}
	p.ids, p.scope = ids, scope
	r := run.Report
	r.Facts["secret"] = o.Namespace + "/" + o.SecretName
	r.Facts["recipients"] = strings.Join(ids.Recipients(), ",")
	checks := IdentityChecks(ids)
	repo, decrypted := RepositoryChecks(ids, scope, verify.Before, o.Force)
	checks = append(checks, repo...)
	r.Facts["decrypted"] = fmt.Sprintf("%d/%d", decrypted, len(scope.Files))
	if verify.Blocks(checks...) {
		blocked := 0
		for _, c := range checks {
			if verify.Blocks(c) {
				blocked++
			}
		}
		checks = append(checks, GateSecretApplied.Skip(fmt.Sprintf("not installed: %d gate%s before it did not pass; nothing was changed (fix them, or pass --force to install anyway)", blocked, plural(blocked, "", "s"))))
	}
	return checks, nil
}

// Do applies the Secret (refusing a rotation without --rotate). A dry run
// reports what it would apply.
func (p *InstallPhase) Do(ctx context.Context, run *pipeline.Run) error {
	c, rm, err := p.open()
	if err != nil {
		return err
	}
	io := InstallOptions{Namespace: p.o.Namespace, Name: p.o.SecretName, Rotate: p.o.Rotate}
	if run.DryRun {
		// The plan lists the Secret, and the phases after this one (the
		// sync's decryption gates) plan against it.
		checks, oc, obj, err := PlanSecret(ctx, c, rm, p.ids, io)
		run.Report.Add(checks...)
		if err != nil {
			return err
		}
		run.Planned([]verify.ObjectChange{oc})
		if obj != nil {
			run.Stage(obj)
		}
		return nil
	}
	ins, changed, err := InstallSecret(ctx, c, rm, p.ids, io)
	run.Report.Add(ins...)
	run.Report.Changed = run.Report.Changed || changed
	if err == nil && !verify.Blocks(ins...) {
		// The report's object changes hold the Secret as the plan listed it.
		action := ssa.UnchangedAction
		if changed {
			action = ssa.ConfiguredAction
			if !slices.ContainsFunc(ins, func(c verify.Check) bool { return c.ID == GateRotation.ID }) {
				action = ssa.CreatedAction // no Secret was there to rotate
			}
		}
		run.Report.Objects = append(run.Report.Objects, verify.ObjectChange{Object: "Secret/" + io.Namespace + "/" + io.Name, Action: action})
	}
	return err
}

// After reads the live Secret back and proves it decrypts what the input did.
func (p *InstallPhase) After(ctx context.Context, _ *pipeline.Run) []verify.Check {
	ck, live := ReadSecret(ctx, p.c, p.o.Namespace, p.o.SecretName, p.ids)
	if live == nil {
		return []verify.Check{ck}
	}
	scope := p.scope
	after, n := RepositoryChecks(live, scope, verify.After, p.o.Force)
	sum := GateInstalledDecrypts.Pass(fmt.Sprintf("the installed Secret decrypts %d/%d SOPS file%s under %s", n, len(scope.Files), plural(len(scope.Files), "", "s"), scope.Env))
	for _, a := range after {
		if a.Verdict == verify.Fail || a.Verdict == verify.Skip {
			sum.Verdict = a.Verdict
			sum.Message = "the installed Secret: " + a.Message
			break
		}
	}
	if sum.Verdict == verify.Pass && n < len(scope.Files) {
		sum.Verdict = verify.Warn // only under --force
	}
	if len(scope.Files) == 0 {
		sum.Verdict, sum.Message = verify.Warn, "the installed Secret parses; there is no SOPS file to prove it on (--force)"
	}
	return []verify.Check{ck, sum}
}

// NewVerifyPhase is `age-key verify`: only the after-gates, on the live Secret.
func NewVerifyPhase(o Options, connect Connect) *VerifyPhase {
	o.defaults()
	return &VerifyPhase{o: o, conn: conn{connect: connect}}
}

// VerifyPhase proves the installed Secret without changing anything.
type VerifyPhase struct {
	o Options
	conn
	scope *Scope
}

// Name implements pipeline.Phase.
func (p *VerifyPhase) Name() string { return PhaseName }

// Gates implements pipeline.Phase.
func (p *VerifyPhase) Gates() []verify.Def {
	return []verify.Def{GateSecret, GateScope.At(verify.After), GateRecipient.At(verify.After), GateDecrypt.At(verify.After), GateSopsConfig.At(verify.After)}
}

// Before scans the repository.
func (p *VerifyPhase) Before(ctx context.Context, _ *pipeline.Run) ([]verify.Check, error) {
	if p.o.Path == "" {
		return nil, verify.InputErrorf("--path is required: the environment whose files the Secret must decrypt, e.g. --env dev or --path clusters/dev")
	}
	scope, err := p.o.scan(ctx, liveFallbackOver(p.client, p.o.Namespace))
	p.scope = scope
	return nil, err
}

// Do connects; it changes nothing.
func (p *VerifyPhase) Do(context.Context, *pipeline.Run) error {
	_, err := p.client()
	return err
}

// After reads the Secret and proves it on the repository.
func (p *VerifyPhase) After(ctx context.Context, run *pipeline.Run) []verify.Check {
	r := run.Report
	r.Facts["secret"] = p.o.Namespace + "/" + p.o.SecretName
	ck, live := ReadSecret(ctx, p.c, p.o.Namespace, p.o.SecretName, nil)
	if live == nil {
		if sc := p.scope; p.o.IfNeeded && ck.Verdict == verify.Fail && sc != nil && len(sc.Files) == 0 && len(sc.Uses()) == 0 && len(sc.Unchecked) == 0 {
			ck.Verdict = verify.Pass
			ck.Message = fmt.Sprintf("Secret %s/%s is not installed, and %s needs none: no SOPS file, no Kustomization decrypts with it", p.o.Namespace, p.o.SecretName, sc.Env)
		}
		return []verify.Check{ck}
	}
	r.Facts["recipients"] = strings.Join(live.Recipients(), ",")
	checks, n := RepositoryChecks(live, p.scope, verify.After, false)
	r.Facts["decrypted"] = fmt.Sprintf("%d/%d", n, len(p.scope.Files))
	return append([]verify.Check{ck}, checks...)
}
