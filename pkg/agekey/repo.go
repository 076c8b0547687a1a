package agekey

import (
	"path"

	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"

	"github.com/getsops/sops/v3/cmd/sops/formats"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/homelab-ops/bootstrap/pkg/gate"
	"github.com/homelab-ops/bootstrap/pkg/input"
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
	// Notes are things a person should know (other Secrets, unresolvable
	// paths); they become evidence and warnings.
	Notes []string
}

// Uses lists the Kustomizations that decrypt with the Secret.
func (s *Scope) Uses() []Kustomization {
	var out []Kustomization
	for _, k := range s.Kustomizations {
		if k.Provider == "sops" && k.SecretRef == s.SecretName {
			out = append(out, k)
		}
	}
	return out
}

type fluxKustomization struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		Path       string `json:"path"`
		Decryption *struct {
			Provider  string `json:"provider"`
			SecretRef *struct {
				Name string `json:"name"`
			} `json:"secretRef"`
		} `json:"decryption"`
	} `json:"spec"`
}

// Scan finds the Flux Kustomizations reachable from env (a directory of
// repo, e.g. clusters/dev) by following spec.path, and the SOPS-encrypted
// files under the path of each one that decrypts with the Secret
// namespace/secretName. Paths are taken relative to the repository root, as
// Flux does for a Kustomization of the repository's own GitRepository.
func Scan(repo, env, namespace, secretName string) (*Scope, error) {
	s := &Scope{Repo: repo, Env: filepath.ToSlash(filepath.Clean(env)), Namespace: namespace, SecretName: secretName}
	st, err := os.Stat(repo)
	if err != nil || !st.IsDir() {
		return nil, gate.InputErrorf("--repo %s: not a directory: pass the GitOps repository's checkout", repo)
	}
	if !filepath.IsLocal(filepath.FromSlash(s.Env)) {
		return nil, gate.InputErrorf("--path %s: must be a directory inside --repo, e.g. clusters/dev", env)
	}
	// sops reads .sops.yaml itself later: hold it to the input rule first.
	if rd, err := input.OpenDir(repo, "--repo "+repo); err == nil {
		_, err := rd.ReadFile(".sops.yaml")
		_ = rd.Close()
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	envDir := filepath.Join(repo, filepath.FromSlash(s.Env))
	if st, err := os.Stat(envDir); err != nil || !st.IsDir() {
		return nil, gate.InputErrorf("--path %s: no such directory in %s%s", env, repo, siblings(filepath.Dir(envDir)))
	}

	visited := map[string]bool{}
	queue := []string{s.Env}
	seen := map[string]bool{}
	for len(queue) > 0 {
		dir := queue[0]
		queue = queue[1:]
		if visited[dir] {
			continue
		}
		visited[dir] = true
		ks, err := findKustomizations(repo, dir)
		if err != nil {
			return nil, err
		}
		for _, k := range ks {
			if seen[k.Ref()] {
				continue
			}
			seen[k.Ref()] = true
			s.Kustomizations = append(s.Kustomizations, k)
			switch {
			case strings.Contains(k.Path, "${"):
				s.Notes = append(s.Notes, fmt.Sprintf("Kustomization %s (%s): spec.path %q uses a substitution variable; its files were not checked", k.Ref(), k.File, k.Path))
				continue
			case !filepath.IsLocal(filepath.FromSlash(k.Path)) && k.Provider != "":
				// The files this key must decrypt cannot be found, and
				// kustomize-controller would not read them from there
				// either: that is the repository to fix, not a skip.
				return nil, gate.InputErrorf("Kustomization %s (%s) decrypts with %s but its spec.path %q leaves the repository: set spec.path to a directory inside it, e.g. ./apps/dev", k.Ref(), k.File, k.Provider, k.Path)
			case !filepath.IsLocal(filepath.FromSlash(k.Path)):
				s.Notes = append(s.Notes, fmt.Sprintf("Kustomization %s (%s): spec.path %q leaves the repository; its files were not checked", k.Ref(), k.File, k.Path))
				continue
			}
			if st, err := os.Stat(filepath.Join(repo, filepath.FromSlash(k.Path))); err != nil || !st.IsDir() {
				s.Notes = append(s.Notes, fmt.Sprintf("Kustomization %s (%s): spec.path %q is not a directory of this repository (another source?); its files were not checked", k.Ref(), k.File, k.Path))
				continue
			}
			queue = append(queue, k.Path)
		}
	}
	sort.Slice(s.Kustomizations, func(i, j int) bool { return s.Kustomizations[i].Ref() < s.Kustomizations[j].Ref() })

	files := map[string]*File{}
	for _, k := range s.Kustomizations {
		switch {
		case k.Provider == "":
			continue
		case k.Provider != "sops":
			s.Notes = append(s.Notes, fmt.Sprintf("Kustomization %s: decryption provider %q is not sops; not checked", k.Ref(), k.Provider))
			continue
		case k.SecretRef == "":
			s.Notes = append(s.Notes, fmt.Sprintf("Kustomization %s: sops decryption without a secretRef (the controller's global key); not checked", k.Ref()))
			continue
		case k.SecretRef != secretName:
			s.Notes = append(s.Notes, fmt.Sprintf("Kustomization %s: decrypts with Secret %s, not %s; not checked", k.Ref(), k.SecretRef, secretName))
			continue
		}
		if k.Namespace != namespace {
			s.Notes = append(s.Notes, fmt.Sprintf("Kustomization %s: its secretRef %s is read from namespace %s, but the Secret is installed in %s", k.Ref(), k.SecretRef, k.Namespace, namespace))
		}
		if strings.Contains(k.Path, "${") || !filepath.IsLocal(filepath.FromSlash(k.Path)) {
			continue
		}
		if err := findEncrypted(repo, k, files); err != nil {
			return nil, err
		}
	}
	for _, f := range files {
		s.Files = append(s.Files, *f)
	}
	sort.Slice(s.Files, func(i, j int) bool { return s.Files[i].Path < s.Files[j].Path })
	return s, nil
}

func siblings(parent string) string {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return ""
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf(": pass one of %s", strings.Join(names, ", "))
}

func isManifest(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// walk visits the regular files under repo/dir, skipping dot directories;
// each is read within the repository and bounded (pkg/input).
func walk(repo, dir string, visit func(rel string, data []byte) error) error {
	rd, err := input.OpenDir(repo, "--repo "+repo)
	if err != nil {
		return err
	}
	defer rd.Close()
	root := filepath.Join(repo, filepath.FromSlash(dir))
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		if d.IsDir() {
			if p != root && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(repo, p)
		if err != nil {
			return err
		}
		data, err := rd.ReadFile(filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		return visit(filepath.ToSlash(rel), data)
	})
}

// findKustomizations lists the Flux Kustomizations a directory declares.
// A directory with a kustomization.yaml is built with kustomize the way
// kustomize-controller builds it (so resources such as ../base count);
// without one, every manifest under it counts, as Flux generates.
func findKustomizations(repo, dir string) ([]Kustomization, error) {
	root := filepath.Join(repo, filepath.FromSlash(dir))
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		if _, err := os.Lstat(filepath.Join(root, n)); err != nil {
			continue
		}
		rd, err := input.OpenDir(repo, "--repo "+repo)
		if err != nil {
			return nil, err
		}
		err = rd.Check(path.Join(dir, n))
		_ = rd.Close()
		if err != nil {
			return nil, err
		}
		res, err := input.KustomizeBuild(repo, root)
		if err != nil {
			return nil, gate.InputErrorf("kustomize build %s: %v: fix %s/%s%s", dir, err, dir, n, input.BuildFix(err, repo))
		}
		y, err := res.AsYaml()
		if err != nil {
			return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
		}
		return parseKustomizations(path.Join(dir, n)+" (built)", y)
	}
	var out []Kustomization
	err := walk(repo, dir, func(rel string, data []byte) error {
		if !isManifest(rel) || !bytes.Contains(data, []byte("kustomize.toolkit.fluxcd.io")) {
			return nil
		}
		ks, err := parseKustomizations(rel, data)
		out = append(out, ks...)
		return err
	})
	return out, err
}

// parseKustomizations reads the Flux Kustomizations of a multi-document
// YAML file.
func parseKustomizations(rel string, data []byte) ([]Kustomization, error) {
	var out []Kustomization
	r := utilyaml.NewYAMLReader(bufioReader(data))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, gate.InputErrorf("%s: not valid YAML (%v): fix the file", rel, err)
		}
		var k fluxKustomization
		if err := yaml.Unmarshal(doc, &k); err != nil {
			continue // not an object this phase reads
		}
		if k.Kind != "Kustomization" || !strings.HasPrefix(k.APIVersion, "kustomize.toolkit.fluxcd.io/") {
			continue
		}
		ks := Kustomization{Name: k.Metadata.Name, Namespace: k.Metadata.Namespace, File: rel,
			Path: strings.TrimPrefix(filepath.ToSlash(filepath.Clean(strings.TrimPrefix(k.Spec.Path, "./"))), "/")}
		if ks.Namespace == "" {
			ks.Namespace = "flux-system"
		}
		if k.Spec.Path == "" {
			ks.Path = "."
		}
		if d := k.Spec.Decryption; d != nil {
			ks.Provider = d.Provider
			if d.SecretRef != nil {
				ks.SecretRef = d.SecretRef.Name
			}
		}
		out = append(out, ks)
	}
}

func findEncrypted(repo string, k Kustomization, files map[string]*File) error {
	return walk(repo, k.Path, func(rel string, data []byte) error {
		if f, ok := files[rel]; ok {
			f.By = append(f.By, k.Ref())
			return nil
		}
		format, ok := sopsFormat(rel)
		if !ok || !bytes.Contains(data, []byte("sops")) {
			return nil
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
	})
}

func bufioReader(data []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(data)) }
