package agekey

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"

	"github.com/getsops/sops/v3/cmd/sops/formats"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/safeio"
)

// Kustomization is the part of a Flux Kustomization this phase reads.
type Kustomization struct {
	Name, Namespace string
	// File is where it is declared, relative to the repository.
	File string
	// Path is spec.path, relative to the repository root.
	Path string
	// Provider and SecretRef are spec.decryption.
	Provider, SecretRef string
}

// Ref is the Kustomization's namespace/name.
func (k Kustomization) Ref() string { return k.Namespace + "/" + k.Name }

// File is one SOPS-encrypted file a Kustomization decrypts with the Secret.
type File struct {
	// Path is relative to the repository root, with forward slashes.
	Path string
	// By lists the Kustomizations whose path holds the file.
	By []string
	// Recipients are the age recipients in the file's sops metadata.
	Recipients []string
	// OtherKeys counts non-age master keys (PGP, KMS …).
	OtherKeys int
	// LoadErr is set when sops cannot parse the file.
	LoadErr error

	// data is the encrypted file, parsed afresh for every test-decrypt:
	// sops decrypts a tree in place.
	data   []byte
	format formats.Format
}

// Scope is what an environment asks of the Secret.
type Scope struct {
	Repo, Env  string
	SecretName string
	Namespace  string
	// Kustomizations are all Flux Kustomizations reachable from Env.
	Kustomizations []Kustomization
	// Files are the SOPS files decrypted with the Secret, sorted by path.
	Files []File
	// Unchecked names the Kustomizations whose path did not build: neither
	// the SOPS files they read nor the Kustomizations they declare (which
	// may decrypt with the Secret) were seen, so the proof does not cover
	// them.
	Unchecked []string
	// Notes are things a person should know (other Secrets, unresolvable
	// paths); they become evidence and warnings.
	Notes []string
	// Fallback is kustomize-controller's --sops-age-secret, nil when it
	// was not needed or could not be read.
	Fallback *Fallback
	// NoFallback names the Kustomizations that decrypt with provider sops
	// and no secretRef where kustomize-controller runs without
	// --sops-age-secret: the controller would decrypt none of their files.
	NoFallback []string
}

// decryptsWith says whether k decrypts with the Secret: by its secretRef,
// or, with provider sops and no secretRef, through the controller's
// --sops-age-secret (kustomize-controller v1.9.5 internal/decryptor
// ImportKeys).
func (s *Scope) decryptsWith(k Kustomization) bool {
	if k.Provider != "sops" {
		return false
	}
	if k.SecretRef == "" {
		return s.Fallback.is(s.Namespace, s.SecretName)
	}
	return k.SecretRef == s.SecretName
}

// Uses lists the Kustomizations that decrypt with the Secret.
func (s *Scope) Uses() []Kustomization {
	var out []Kustomization
	for _, k := range s.Kustomizations {
		if s.decryptsWith(k) {
			out = append(out, k)
		}
	}
	return out
}

// Scan finds the Flux Kustomizations of the environment env (a directory
// of repo, e.g. clusters/dev) through the one repository model
// (fluxrepo.Load: each spec.path built as kustomize-controller builds it),
// and the SOPS-encrypted files read by the build of each Kustomization that
// decrypts with the Secret namespace/secretName, by its secretRef or
// through fb, kustomize-controller's --sops-age-secret (nil: unknown).
func Scan(repo, env, namespace, secretName string, fb *Fallback) (*Scope, error) {
	// The root directory may be a plain directory of manifests: the
	// controller generates its kustomization.yaml.
	e, err := fluxrepo.Load(fluxrepo.Options{Repo: repo, Path: env, Namespace: namespace, KeepGoing: true})
	if err != nil {
		return nil, err
	}
	return ScopeOf(e, secretName, fb)
}

// ScopeOf is Scan of an environment already loaded.
func ScopeOf(e *fluxrepo.Env, secretName string, fb *Fallback) (*Scope, error) {
	o := e.Options
	repo, namespace := o.Repo, o.Namespace
	s := &Scope{Repo: repo, Env: filepath.ToSlash(filepath.Clean(o.Path)), Namespace: namespace, SecretName: secretName, Fallback: fb}
	if err := checkSopsConfig(repo); err != nil {
		return nil, err
	}
	s.Notes = append(s.Notes, e.Notes...)
	byRef := map[string]*fluxrepo.Kustomization{}
	for _, k := range e.Kustomizations {
		ks := Kustomization{Name: k.Name, Namespace: k.Namespace, File: k.Location.String(), Path: k.Path}
		if d := k.Spec.Decryption; d != nil {
			ks.Provider = d.Provider
			if d.SecretRef != nil {
				ks.SecretRef = d.SecretRef.Name
			}
		}
		s.Kustomizations = append(s.Kustomizations, ks)
		byRef[ks.Ref()] = k
	}
	sort.Slice(s.Kustomizations, func(i, j int) bool { return s.Kustomizations[i].Ref() < s.Kustomizations[j].Ref() })
	for _, k := range e.Kustomizations {
		if k.Err != nil {
			s.Unchecked = append(s.Unchecked, fmt.Sprintf("Kustomization %s: its path did not build, so its SOPS files and the Kustomizations it declares were not seen (%v)", k.Ref(), k.Err))
		}
	}

	rd, err := safeio.OpenDir(repo, "--repo "+repo)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	files := map[string]*File{}
	for _, k := range s.Kustomizations {
		switch {
		case k.Provider == "":
			continue
		case k.Provider != "sops":
			s.Notes = append(s.Notes, fmt.Sprintf("Kustomization %s: decryption provider %q is not sops; not checked", k.Ref(), k.Provider))
			continue
		case k.SecretRef == "" && fb == nil:
			s.Notes = append(s.Notes, fmt.Sprintf("Kustomization %s: sops decryption without a secretRef reads kustomize-controller's --sops-age-secret, which was not read; not checked", k.Ref()))
			continue
		case k.SecretRef == "" && fb.Name == "":
			s.NoFallback = append(s.NoFallback, k.Ref())
			s.Notes = append(s.Notes, fmt.Sprintf("Kustomization %s: sops decryption without a secretRef, and kustomize-controller (%s) runs without --sops-age-secret: the controller would not decrypt its SOPS files; set its spec.decryption.secretRef.name to %s, or add --sops-age-secret=%s to kustomize-controller", k.Ref(), fb.From, secretName, secretName))
			continue
		case k.SecretRef == "" && !s.decryptsWith(k):
			s.Notes = append(s.Notes, fmt.Sprintf("Kustomization %s: sops decryption without a secretRef decrypts with kustomize-controller's --sops-age-secret, Secret %s/%s (%s), not %s/%s; not checked", k.Ref(), fb.Namespace, fb.Name, fb.From, namespace, secretName))
			continue
		case k.SecretRef != "" && k.SecretRef != secretName:
			s.Notes = append(s.Notes, fmt.Sprintf("Kustomization %s: decrypts with Secret %s, not %s; not checked", k.Ref(), k.SecretRef, secretName))
			continue
		}
		if k.SecretRef != "" && k.Namespace != namespace {
			s.Notes = append(s.Notes, fmt.Sprintf("Kustomization %s: its secretRef %s is read from namespace %s, but the Secret is installed in %s", k.Ref(), k.SecretRef, k.Namespace, namespace))
		}
		fk := byRef[k.Ref()]
		if !fk.Built {
			continue // not built by design (another source, a variable in its path): the model's note says so
		}
		for _, rel := range fk.Files {
			if err := addEncrypted(rd, rel, k, files); err != nil {
				return nil, err
			}
		}
	}
	for _, f := range files {
		s.Files = append(s.Files, *f)
	}
	sort.Slice(s.Files, func(i, j int) bool { return s.Files[i].Path < s.Files[j].Path })
	return s, nil
}

// checkSopsConfig holds .sops.yaml, which sops reads itself later, to the
// input rule (inside the repository, regular, bounded).
func checkSopsConfig(repo string) error {
	rd, err := safeio.OpenDir(repo, "--repo "+repo)
	if err != nil {
		return nil // the model says what is wrong with the repository
	}
	defer rd.Close()
	if _, err := rd.ReadFile(".sops.yaml"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// addEncrypted records rel (a file a Kustomization's build read) when it is
// SOPS-encrypted; it is read again from the repository itself, bounded.
func addEncrypted(rd *safeio.Dir, rel string, k Kustomization, files map[string]*File) error {
	if f, ok := files[rel]; ok {
		f.By = append(f.By, k.Ref())
		return nil
	}
	format, ok := sopsFormat(rel)
	if !ok {
		return nil
	}
	data, err := rd.ReadFile(rel)
	if err != nil || !bytes.Contains(data, []byte("sops")) {
		return err
	}
	tree, encrypted, err := loadEncrypted(data, format)
	if !encrypted {
		return nil
	}
	f := &File{Path: rel, By: []string{k.Ref()}, LoadErr: err, data: data, format: format}
	if err == nil {
		f.Recipients, f.OtherKeys = ageRecipients(tree)
	}
	files[rel] = f
	return nil
}
