package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"

	"github.com/spf13/pflag"

	"github.com/homelab-ops/bootstrap/internal/flow"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/input"
	"github.com/homelab-ops/bootstrap/internal/rootsync"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// syncFlags are the flags up and sync share, defined once: the offline
// check first (with its --compare and --no-compare), the temporary source
// (--source-*, or --serve and its flags) and --cutover-when-ready.
type syncFlags struct {
	withCheck                    bool
	static                       flow.Static
	srcURL, srcBranch, srcSecret string
	// rootKind and rootRef declare the root on the command line, with
	// srcURL as its source's URL (not a temporary source).
	rootKind, rootRef string
	// fluxInstance is the file whose FluxInstance spec.sync declares the
	// root, when several files of the repository name the path.
	fluxInstance string
	serve        serveFlags
	// supply are the --supply inputs (files, or - for stdin).
	supply []string
	// found says how the environment was found when no --env or --path
	// named it (environment), for the report's root fact.
	found string
}

func (f *syncFlags) add(fl *pflag.FlagSet) {
	fl.BoolVar(&f.withCheck, "check", true, "run 'bootstrap check' of the environment first (phase static); --check=false skips it, with a warning")
	addCompareFlags(fl, &f.static.Compare, &f.static.NoCompare, "static: ")
	fl.Var(input.NewRuled(&f.srcURL, "URL", func(v string) error {
		if strings.HasPrefix(v, sourcev1.OCIRepositoryPrefix) {
			// An OCI root's own registry (with --source-kind OCIRepository).
			return fluxrepo.CheckSync(&fluxrepo.Sync{Kind: sourcev1.OCIRepositoryKind, URL: v}, "--source-url")
		}
		return input.ValidGitURL("--source-url", v)
	}), "source-url", "point the GitRepository at this temporary source (cold bring-up) until 'bootstrap cutover'; with --source-kind, the URL of the declared root's own source (oci://HOST/REPO for an OCIRepository)")
	fl.Var(input.NewRuled(&f.rootKind, "KIND", func(v string) error {
		if v != sourcev1.GitRepositoryKind && v != sourcev1.OCIRepositoryKind {
			return fmt.Errorf("sync applies a root whose source is a GitRepository or an OCIRepository (a Bucket root is the Flux Operator's to create, or commit it): use --source-kind GitRepository or OCIRepository")
		}
		return nil
	}), "source-kind", "declare the root on the command line, for a repository that renders none and has no FluxInstance spec.sync for the path: GitRepository or OCIRepository (--source-url is then its URL, not a temporary source)")
	fl.Var(input.NewRepoPath(&f.fluxInstance), "flux-instance", "the file holding the FluxInstance (or flux-instance chart values) whose spec.sync declares the root (default: any file of the repository whose spec.sync.path is the path)")
	fl.StringVar(&f.rootRef, "source-ref", "", "with --source-kind: the Git reference of the declared root's source (default refs/heads/main), or the OCI tag (default latest)")
	fl.StringVar(&f.srcBranch, "source-branch", "", "branch of the temporary source (default: the declared ref)")
	fl.Var(input.NewOptionalName(&f.srcSecret, "Secret with the temporary source's credentials"), "source-secret", "Secret with the temporary source's credentials (default: none)")
	f.serve.add(fl)
	fl.StringArrayVar(&f.supply, "supply", nil, "YAML file (or - for stdin) of v1 Secrets and ConfigMaps the repository does not hold that the root or its Kustomizations substitute from: validated before the first request, SOPS-encrypted ones decrypted with the age key, applied before the root, never printed (repeatable)")
}

// validate checks the flags and their combinations before anything is
// read; env is the environment, with the root's namespace. A flag given
// that would have no effect is refused, naming what it needs.
func (f *syncFlags) validate(fl *pflag.FlagSet, env rootsync.Options) error {
	if f.rootKind != "" || f.rootRef != "" {
		return f.validateDeclared(fl, env)
	}
	if strings.HasPrefix(f.srcURL, sourcev1.OCIRepositoryPrefix) {
		return verify.InputErrorf("--source-url %s is an OCI registry: a temporary source is Git's; declare an OCI root with --source-kind OCIRepository --source-url %s [--source-ref TAG], or serve this work tree as its artifact with --serve", f.srcURL, f.srcURL)
	}
	if f.srcURL == "" && (f.srcBranch != "" || f.srcSecret != "") {
		return verify.InputErrorf("--source-branch and --source-secret need --source-url")
	}
	if f.serve.whenReady && input.Given(fl, "cutover-when-ready") && f.srcURL == "" && f.serve.addr == "" {
		return verify.InputErrorf("--cutover-when-ready needs a temporary source to cut over from: add --serve (this machine serves the checkout) or --source-url URL")
	}
	if err := f.validateSupply(); err != nil {
		return err
	}
	if !f.withCheck && (input.Given(fl, "compare") || input.Given(fl, "no-compare")) {
		return verify.InputErrorf("--compare and --no-compare are phase static's and need it: drop --check=false")
	}
	return errors.Join(rootsync.ValidateSync(rootsync.RunOptions{Build: env}, f.srcURL, f.srcSecret), f.serve.validate(fl, f.srcURL))
}

// validateSupply refuses a --supply that is no file name, and stdin read
// twice.
func (f *syncFlags) validateSupply() error {
	stdin := 0
	for _, p := range f.supply {
		switch {
		case p == "":
			return verify.InputErrorf("--supply needs a file name (or - for stdin)")
		case p == "-":
			stdin++
		}
	}
	if stdin > 1 {
		return verify.InputErrorf("--supply - is given %d times: stdin is read once; put the objects in one input, or give files", stdin)
	}
	return nil
}

// suppliesStdin says whether a --supply reads stdin.
func (f *syncFlags) suppliesStdin() bool { return slices.Contains(f.supply, "-") }

// validateDeclared checks a root declared on the command line: its source
// is the one the Kustomization keeps, so nothing temporary goes with it.
func (f *syncFlags) validateDeclared(fl *pflag.FlagSet, env rootsync.Options) error {
	if f.srcURL == "" {
		return verify.InputErrorf("--source-kind and --source-ref declare the root with --source-url URL: add --source-url")
	}
	if f.srcBranch != "" || f.srcSecret != "" || f.serve.addr != "" || (f.serve.whenReady && input.Given(fl, "cutover-when-ready")) {
		return verify.InputErrorf("--source-kind declares the root on the command line: its --source-url is the root's own source, which no commit declares to cut over to; drop --source-branch, --source-secret, --serve and --cutover-when-ready (or commit the root and use them for a temporary source)")
	}
	_, err := f.declared()
	return errors.Join(err, input.ValidNamespace("--namespace", env.Namespace))
}

// declared is the root the flags declare (nil: none).
func (f *syncFlags) declared() (*fluxrepo.Sync, error) {
	if f.rootKind == "" && f.rootRef == "" {
		return nil, nil
	}
	s := &fluxrepo.Sync{Kind: f.rootKind, URL: f.srcURL, Ref: f.rootRef}
	if s.Kind == "" {
		s.Kind = "GitRepository"
	}
	if s.Ref == "" && s.Kind == "GitRepository" {
		s.Ref = "refs/heads/main"
	}
	return s, fluxrepo.CheckSync(s, "--source-url")
}

// staticOptions are phase static's options (nil: --check=false).
func (f *syncFlags) staticOptions() *flow.Static {
	if !f.withCheck {
		return nil
	}
	o := f.static
	return &o
}

// sync is the sync phase's options and what follows it: the temporary
// source (--source-url or --serve) and --cutover-when-ready.
func (f *syncFlags) sync(getenv func(string) string, stdin io.Reader) *flow.Sync {
	s := &flow.Sync{Serve: f.serve.options(getenv), CutoverWhenReady: f.serve.whenReady, CutoverWait: f.serve.cutoverWait, Supply: f.supply, Stdin: stdin}
	if f.srcURL != "" && f.rootKind == "" && f.rootRef == "" {
		s.Source = &rootsync.Temporary{URL: f.srcURL, Branch: f.srcBranch, Secret: f.srcSecret}
	}
	return s
}

// environment resolves the environment up and sync bring up, after the
// flags are validated: --env or --path, or with neither the one cluster
// root the repository declares (fluxrepo.Discover, as check finds them),
// or of several the one that brings the others up on its cluster
// (fluxrepo.Entry); roots of several clusters are refused, naming each
// --path. Without --root and
// --namespace, and no root declared on the command line, a path whose one
// self-applying root Kustomization has another name (the Taskfile
// layout's flux-system/cluster) is brought up as that root
// (rootsync.Options.AdoptRoot; the report says so).
func (f *syncFlags) environment(fl *pflag.FlagSet, rf repoFlags, env *rootsync.Options) error {
	named := input.Given(fl, "root") || input.Given(fl, "namespace")
	env.AdoptRoot = !named && env.Sync == nil && f.fluxInstance == ""
	if rf.env != "" || rf.path != "" {
		var err error
		env.Path, err = rf.resolve()
		return err
	}
	if env.Sync != nil || f.fluxInstance != "" {
		return verify.InputErrorf("--source-kind, --source-ref and --flux-instance declare the root of one cluster: pass its --path (or --env)")
	}
	o := fluxrepo.Options{Namespace: env.Namespace, RootName: env.RootName}
	roots, notes, err := fluxrepo.Discover(rf.repo, o)
	if err != nil {
		return err
	}
	if len(roots) == 0 {
		msg := fmt.Sprintf("which environment? no cluster root found in %s: pass --env NAME (clusters/NAME) or --path DIR; %s", rf.repo, fluxrepo.DiscoverLooksFor(o))
		if len(notes) > 0 {
			msg += "; passed over: " + strings.Join(notes, "; ")
		}
		return verify.InputErrorf("%s", msg)
	}
	// Roots that run on one cluster (one brings the others up: nested, or
	// its tree makes the FluxInstance of another) are brought up by it.
	r, ok := fluxrepo.Entry(roots)
	if !ok {
		var each []string
		for _, r := range roots {
			each = append(each, "--path "+r.Path)
		}
		return verify.InputErrorf("which environment? %s declares %d cluster roots: pass one of %s", rf.repo, len(roots), strings.Join(each, ", "))
	}
	env.Path = r.Path
	if r.Name != "" && !named {
		env.Namespace, env.RootName = r.Namespace, r.Name
	}
	var by []string
	for _, d := range r.By {
		by = append(by, d.String())
	}
	f.found = fmt.Sprintf("%s/%s at %s (no --env or --path: the cluster root the repository declares, %s)", env.Namespace, env.RootName, r.Path, strings.Join(by, "; "))
	if len(roots) > 1 {
		f.found += fmt.Sprintf("; it brings up the %d other root(s) found on its cluster", len(roots)-1)
	}
	return nil
}
