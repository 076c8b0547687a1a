package agekey

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/config"

	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// PhaseName is this phase's name in reports.
const PhaseName = "age-key"

// Gates of the age-key phase. The repository gates run before the install
// (with the given key) and after it (with the installed Secret): At picks
// the stage.
var (
	GateIdentity          = verify.Def{ID: "age-key.identity", Phase: PhaseName, Stage: verify.Before, Title: "age identity parses"}
	GateIdentityFileMode  = verify.Def{ID: "age-key.identity-file-mode", Phase: PhaseName, Stage: verify.Before, Title: "key file is private to its owner"}
	GateScope             = verify.Def{ID: "age-key.scope", Phase: PhaseName, Stage: verify.Before, Title: "the environment's SOPS files are found"}
	GateRecipient         = verify.Def{ID: "age-key.recipient", Phase: PhaseName, Stage: verify.Before, Title: "the key is a recipient of each SOPS file", Prefix: true}
	GateDecrypt           = verify.Def{ID: "age-key.decrypt", Phase: PhaseName, Stage: verify.Before, Title: "each SOPS file decrypts in-process", Prefix: true}
	GateSopsConfig        = verify.Def{ID: "age-key.sops-config", Phase: PhaseName, Stage: verify.Before, Title: ".sops.yaml creation rules include the key"}
	GateRotation          = verify.Def{ID: "age-key.rotation", Phase: PhaseName, Stage: verify.Before, Title: "an existing key is replaced only with --rotate"}
	GateSecretApplied     = verify.Def{ID: "age-key.secret-applied", Phase: PhaseName, Stage: verify.After, Title: "the Secret is applied"}
	GateSecret            = verify.Def{ID: "age-key.secret", Phase: PhaseName, Stage: verify.After, Title: "the Secret exists and holds age identities"}
	GateInstalledDecrypts = verify.Def{ID: "age-key.installed-decrypts", Phase: PhaseName, Stage: verify.After, Title: "the installed Secret decrypts the environment"}
)

// Defaults of the Secret kustomize-controller reads.
const (
	DefaultNamespace  = fluxobj.DefaultNamespace
	DefaultSecretName = "sops-age"
	// DataKey is the Secret's data key; kustomize-controller imports every
	// key ending in .agekey.
	DataKey = "age.agekey"
)

// IdentityChecks describe the parsed input: which identities (by public
// key), from where, and whether the key file is private to its owner.
func IdentityChecks(ids *Identities) []verify.Check {
	var ev []string
	ev = append(ev, "source: "+ids.Source)
	for _, k := range ids.Keys {
		ev = append(ev, fmt.Sprintf("%s identity, recipient %s", k.Type, k.Recipient))
	}
	cs := []verify.Check{GateIdentity.Pass(fmt.Sprintf("%d age identit%s from %s", len(ids.Keys), plural(len(ids.Keys), "y", "ies"), ids.Source), ev...)}
	if ids.FromFile {
		c := GateIdentityFileMode.Pass(fmt.Sprintf("%s has mode %04o", ids.Source, ids.Mode), fmt.Sprintf("mode %04o", ids.Mode))
		if ids.Mode&0o044 != 0 {
			c.Verdict = verify.Warn
			c.Message = fmt.Sprintf("%s is readable by group or others (mode %04o): chmod 600 %s", ids.Source, ids.Mode, ids.Source)
		}
		cs = append(cs, c)
	}
	return cs
}

// RepositoryChecks match ids against the files of s and test-decrypt them.
// With force, a key that decrypts nothing is a warning instead of a
// failure. decrypted counts the files the key decrypts.
func RepositoryChecks(ids *Identities, s *Scope, stage verify.Stage, force bool) (checks []verify.Check, decrypted int) {
	target := s.Namespace + "/" + s.SecretName
	uses := s.Uses()
	scope := GateScope.At(stage).New()
	for _, k := range s.Kustomizations {
		d := "no decryption"
		switch {
		case k.Provider == "sops" && k.SecretRef == "" && s.Fallback != nil:
			d = fmt.Sprintf("decryption sops, no secretRef: kustomize-controller's --sops-age-secret %q (%s)", s.Fallback.Name, s.Fallback.From)
		case k.Provider != "":
			d = fmt.Sprintf("decryption %s, secretRef %q", k.Provider, k.SecretRef)
		}
		scope.Evidence = append(scope.Evidence, fmt.Sprintf("Kustomization %s (%s): path %s, %s", k.Ref(), k.File, k.Path, d))
	}
	for _, f := range s.Files {
		scope.Evidence = append(scope.Evidence, fmt.Sprintf("SOPS file %s (Kustomization %s)", f.Path, strings.Join(f.By, ", ")))
	}
	scope.Evidence = append(scope.Evidence, s.Notes...)
	switch {
	case len(s.Files) > 0 && len(s.Unchecked) > 0:
		scope.Verdict = verify.Warn
		scope.Message = fmt.Sprintf("%d SOPS file%s decrypted with Secret %s found under %s, but %d Kustomization%s did not build, so what they hold is not proven: %s",
			len(s.Files), plural(len(s.Files), "", "s"), target, s.Env, len(s.Unchecked), plural(len(s.Unchecked), "", "s"), s.Unchecked[0])
		scope.Evidence = append(scope.Evidence, s.Unchecked...)
	case len(s.Files) > 0:
		scope.Verdict = verify.Pass
		scope.Message = fmt.Sprintf("%d SOPS file%s decrypted with Secret %s by %d Kustomization%s under %s", len(s.Files), plural(len(s.Files), "", "s"), target, len(uses), plural(len(uses), "", "s"), s.Env)
	default:
		scope.Evidence = append(scope.Evidence, s.Unchecked...)
		why := fmt.Sprintf("no Kustomization under %s decrypts with Secret %s", s.Env, target)
		if len(uses) > 0 {
			why = fmt.Sprintf("the %d Kustomization%s under %s that decrypt with Secret %s hold no SOPS-encrypted file", len(uses), plural(len(uses), "", "s"), s.Env, target)
		}
		scope.Verdict, scope.Message = verify.Skip, why+": nothing proves the key decrypts this environment; check --repo/--path, or pass --force to install it anyway"
		if force {
			scope.Verdict, scope.Message = verify.Warn, why+"; installed anyway (--force)"
		}
	}
	if len(s.NoFallback) > 0 && scope.Verdict == verify.Pass {
		scope.Verdict = verify.Warn
		scope.Message += fmt.Sprintf("; but Kustomization(s) %s decrypt with provider sops and no secretRef, and kustomize-controller runs without --sops-age-secret: their files would not decrypt", strings.Join(s.NoFallback, ", "))
	}
	checks = append(checks, scope)

	for _, f := range s.Files {
		rc, dc := GateRecipient.At(stage).Each(f.Path).New(), GateDecrypt.At(stage).Each(f.Path).New()
		rc.Title, dc.Title = "the key is a recipient of "+f.Path, f.Path+" decrypts in-process"
		rc.Evidence = append(rc.Evidence, "file recipients (sops.age): "+orNone(f.Recipients))
		if f.OtherKeys > 0 {
			rc.Evidence = append(rc.Evidence, fmt.Sprintf("%d non-age master key(s), not usable by this Secret", f.OtherKeys))
		}
		rc.Evidence = append(rc.Evidence, "key recipients: "+strings.Join(ids.Recipients(), ", "))
		if f.LoadErr != nil {
			rc.Verdict, rc.Message = verify.Fail, fmt.Sprintf("%s: sops cannot read its metadata (%v): re-encrypt it with sops", f.Path, f.LoadErr)
			dc.Verdict, dc.Message = verify.Fail, fmt.Sprintf("%s: not decryptable: sops cannot read it", f.Path)
			checks = append(checks, soften(rc, force), soften(dc, force))
			continue
		}
		var match []string
		for _, r := range f.Recipients {
			if ids.Has(r) {
				match = append(match, r)
			}
		}
		if len(match) > 0 {
			rc.Verdict, rc.Message = verify.Pass, fmt.Sprintf("%s is encrypted to %s", f.Path, strings.Join(match, ", "))
		} else {
			rc.Verdict = verify.Fail
			rc.Message = fmt.Sprintf("%s is encrypted to someone else (%s), not to this key (%s): use the environment's key, or add %s to the file's .sops.yaml rule and run `sops updatekeys %s` with a key that can decrypt it",
				f.Path, orNone(f.Recipients), strings.Join(ids.Recipients(), ", "), ids.Recipients()[0], f.Path)
		}
		if err := ids.testDecrypt(f.data, f.format); err != nil {
			dc.Verdict = verify.Fail
			why := oneLine(err.Error())
			if strings.Contains(why, "did not match any of the recipients") {
				why = "none of its identities matches a recipient of the file (sops could not decrypt the data key)"
			}
			dc.Message = fmt.Sprintf("%s does not decrypt with this key: %s", f.Path, why)
		} else {
			decrypted++
			dc.Verdict, dc.Message = verify.Pass, fmt.Sprintf("%s decrypts with this key and its MAC verifies", f.Path)
		}
		dc.Evidence = []string{"decrypted in memory with sops " + sopsVersion() + "; the plaintext was discarded"}
		checks = append(checks, soften(rc, force), soften(dc, force))
	}
	if len(s.Files) > 0 {
		checks = append(checks, sopsConfigCheck(ids, s, stage))
	}
	return checks, decrypted
}

// soften turns a failure into a warning under --force, saying so.
func soften(c verify.Check, force bool) verify.Check {
	if force && c.Verdict == verify.Fail {
		c.Verdict = verify.Warn
		c.Message += " (--force: installed anyway)"
	}
	return c
}

// sopsConfigCheck reads .sops.yaml's creation rules for each file: a rule
// that does not list the key means the next `sops` edit locks it out.
func sopsConfigCheck(ids *Identities, s *Scope, stage verify.Stage) verify.Check {
	c := GateSopsConfig.At(stage).New()
	confPath := filepath.Join(s.Repo, ".sops.yaml")
	if _, err := os.Stat(confPath); errors.Is(err, fs.ErrNotExist) {
		c.Verdict = verify.Warn
		c.Message = "no .sops.yaml at the repository root: sops cannot choose recipients when a file is re-encrypted; add creation_rules with age: " + ids.Recipients()[0]
		return c
	}
	abs, err := filepath.Abs(s.Repo)
	if err != nil {
		c.Verdict, c.Message = verify.Warn, fmt.Sprintf("cannot resolve %s: %v", s.Repo, err)
		return c
	}
	var problems []string
	for _, f := range s.Files {
		conf, err := config.LoadCreationRuleForFile(confPath, filepath.Join(abs, filepath.FromSlash(f.Path)), nil)
		if err != nil || conf == nil {
			why := "no creation rule"
			if err != nil {
				why = oneLine(err.Error())
			}
			problems = append(problems, fmt.Sprintf("%s: %s", f.Path, why))
			c.Evidence = append(c.Evidence, fmt.Sprintf("%s: %s", f.Path, why))
			continue
		}
		var rs []string
		has := false
		for _, g := range conf.KeyGroups {
			for _, k := range g {
				if ak, ok := k.(*sopsage.MasterKey); ok {
					rs = append(rs, ak.Recipient)
					has = has || ids.Has(ak.Recipient)
				}
			}
		}
		c.Evidence = append(c.Evidence, fmt.Sprintf("%s: rule recipients %s", f.Path, orNone(rs)))
		if !has {
			problems = append(problems, fmt.Sprintf("%s: its rule lists %s", f.Path, orNone(rs)))
		}
	}
	if len(problems) > 0 {
		c.Verdict = verify.Warn
		c.Message = fmt.Sprintf(".sops.yaml does not give this key (%s) to every file, so the next `sops` edit would lock it out: %s; add the recipient to those rules", ids.Recipients()[0], strings.Join(problems, "; "))
		return c
	}
	c.Verdict, c.Message = verify.Pass, fmt.Sprintf("every file's .sops.yaml rule lists this key (%d file%s)", len(s.Files), plural(len(s.Files), "", "s"))
	return c
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
