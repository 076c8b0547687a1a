// Package agekeytest builds GitOps repositories with SOPS-encrypted
// Secrets for the tests of the age-key phase: unit, CLI and end-to-end.
// It needs only public keys; tests generate their identities in memory.
package agekeytest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"filippo.io/age"

	"github.com/homelab-ops/bootstrap/internal/agekey"
)

// NewIdentity generates an X25519 identity and returns its identity file
// text (as age-keygen writes it) and its recipient.
func NewIdentity() (keyFile, recipient string, err error) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return "", "", err
	}
	r := id.Recipient().String()
	return fmt.Sprintf("# created: by a test\n# public key: %s\n%s\n", r, id.String()), r, nil
}

// Env is one environment of a fixture repository.
type Env struct {
	// Name is the environment: clusters/<Name>, apps/<Name>.
	Name string
	// Recipients encrypt apps/<Name>/secret.sops.yaml.
	Recipients []string
	// RuleRecipients are the .sops.yaml rule's for apps/<Name>; default
	// Recipients.
	RuleRecipients []string
	// Value is the Secret's stringData.value.
	Value string
	// SecretRef is the Kustomization's decryption.secretRef; default
	// sops-age; FallbackRef: provider sops and no secretRef.
	SecretRef string
	// Extra are more files of apps/<Name>, by name.
	Extra map[string]string
}

// FallbackRef as a secretRef writes decryption provider sops without a
// secretRef: kustomize-controller's --sops-age-secret decrypts it.
const FallbackRef = "-"

// Kustomization is a Flux Kustomization manifest; secretRef "" is no
// decryption, FallbackRef provider sops without a secretRef.
func Kustomization(name, path, secretRef string) string {
	s := fmt.Sprintf(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: %s
  namespace: flux-system
spec:
  interval: 10m
  path: ./%s
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
`, name, path)
	switch secretRef {
	case "":
	case FallbackRef:
		s += "  decryption:\n    provider: sops\n"
	default:
		s += fmt.Sprintf("  decryption:\n    provider: sops\n    secretRef:\n      name: %s\n", secretRef)
	}
	return s
}

// SecretYAML is a plain Secret manifest in namespace default.
func SecretYAML(name, value string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: %s
  namespace: default
type: Opaque
stringData:
  value: %s
`, name, value)
}

// EncryptedSecret is SecretYAML encrypted to recipients, as
// `sops --encrypt --encrypted-regex '^(data|stringData)$'` writes it.
func EncryptedSecret(name, value string, recipients ...string) (string, error) {
	b, err := agekey.Encrypt("secret.yaml", []byte(SecretYAML(name, value)), recipients, agekey.EncryptOptions{EncryptedRegex: "^(data|stringData)$"})
	return string(b), err
}

// WriteRepo writes a repository into dir: per environment a root
// Kustomization clusters/<env>/flux-system.yaml (path clusters/<env>, no
// decryption), clusters/<env>/apps.yaml (path apps/<env>, sops
// decryption), and apps/<env>/ with a kustomization.yaml and
// secret.sops.yaml (Secret app-secret), plus .sops.yaml.
func WriteRepo(dir string, envs ...Env) error {
	files := map[string]string{}
	var rules strings.Builder
	rules.WriteString("creation_rules:\n")
	for _, e := range envs {
		ref := e.SecretRef
		if ref == "" {
			ref = agekey.DefaultSecretName
		}
		files["clusters/"+e.Name+"/flux-system.yaml"] = Kustomization("flux-system", "clusters/"+e.Name, "")
		files["clusters/"+e.Name+"/apps.yaml"] = Kustomization("apps", "apps/"+e.Name, ref)
		enc, err := EncryptedSecret("app-secret", e.Value, e.Recipients...)
		if err != nil {
			return err
		}
		files["apps/"+e.Name+"/secret.sops.yaml"] = enc
		res := []string{"secret.sops.yaml"}
		for name, content := range e.Extra {
			files["apps/"+e.Name+"/"+name] = content
			if strings.HasSuffix(name, ".yaml") {
				res = append(res, name)
			}
		}
		files["apps/"+e.Name+"/kustomization.yaml"] = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - " + strings.Join(res, "\n  - ") + "\n"
		rr := e.RuleRecipients
		if rr == nil {
			rr = e.Recipients
		}
		fmt.Fprintf(&rules, "  - path_regex: ^apps/%s/.*\\.yaml$\n    encrypted_regex: ^(data|stringData)$\n    age: %s\n", e.Name, strings.Join(rr, ","))
	}
	files[".sops.yaml"] = rules.String()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}
