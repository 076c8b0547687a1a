package rootsync

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"

	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/input"
	"github.com/homelab-ops/bootstrap/internal/safeio"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// SuppliedNote is what the plan says of a supplied object.
const SuppliedNote = "supplied"

// Supplied is one object of a --supply file: a v1 Secret or ConfigMap the
// repository does not hold (made by a secret manager, a bootstrap
// template, by hand) that the root or its children substitute from,
// applied before the root. Its values are never printed: only its kind,
// namespace, name, keys and where it came from.
type Supplied struct {
	Kind, Namespace, Name string
	// From is "FILE document N" (N from 1).
	From string
	// Encrypted: SOPS-encrypted, decrypted with the age key before use.
	Encrypted bool
	// Object is what is applied (decrypted); nil until decrypted.
	Object *unstructured.Unstructured

	raw []byte // the document as YAML, in its own order
}

// Key is kind/namespace/name.
func (s *Supplied) Key() string { return fluxrepo.DataKey(s.Kind, s.Namespace, s.Name) }

// Keys are the names of its data, never the values (nil before it is
// decrypted).
func (s *Supplied) Keys() []string {
	if s.Object == nil {
		return nil
	}
	return dataKeys(s.Object)
}

// maxSupply bounds a --supply input (a few Secrets, not a repository).
const maxSupply = 4 << 20

// ReadSupply reads and validates one --supply input: a file, or "-" for
// stdin (read once; the caller refuses a second reader of stdin).
func ReadSupply(path string, stdin io.Reader) ([]*Supplied, error) {
	label := "--supply " + path
	var data []byte
	var err error
	if path == "-" {
		if stdin == nil {
			return nil, verify.InputErrorf("--supply -: no standard input to read from")
		}
		if data, err = safeio.ReadLimited(stdin, maxSupply); err != nil {
			return nil, verify.InputErrorf("--supply -: read stdin: %v", err)
		}
		label = "--supply - (stdin)"
	} else if data, err = safeio.ReadFileMax(path, label, maxSupply); err != nil {
		return nil, err
	}
	return ParseSupply(label, data)
}

// ParseSupply validates a --supply input (label names it in errors): every
// document a v1 Secret or ConfigMap with metadata.name and
// metadata.namespace (valid names), SOPS-encrypted or not. An error names
// the input, the document and the fix, and never holds a value.
func ParseSupply(label string, data []byte) ([]*Supplied, error) {
	if line, why := safeio.AliasBomb(data); why != "" {
		return nil, verify.InputErrorf("%s: line %d: %s", label, line, why)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []*Supplied
	for n := 1; ; n++ {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			// yaml's syntax errors name a line, not a value.
			return nil, verify.InputErrorf("%s: document %d is not YAML (%s): it must hold v1 Secrets or ConfigMaps", label, n, yamlLine(err))
		}
		if len(doc.Content) == 0 || (doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].Tag == "!!null") {
			continue // an empty document
		}
		s, err := supplied(label, n, &doc)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, verify.InputErrorf("%s holds no object: give a YAML file of v1 Secrets or ConfigMaps (name and namespace set)", label)
	}
	return out, nil
}

// supplied validates document n of label.
func supplied(label string, n int, doc *yaml.Node) (*Supplied, error) {
	where := fmt.Sprintf("%s document %d", label, n)
	var head struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   struct {
			Name      string `yaml:"name"`
			Namespace string `yaml:"namespace"`
		} `yaml:"metadata"`
		Sops yaml.Node `yaml:"sops"`
	}
	if doc.Content[0].Kind != yaml.MappingNode || doc.Decode(&head) != nil {
		return nil, verify.InputErrorf("%s (line %d) is not an object: --supply takes v1 Secrets and ConfigMaps", where, doc.Content[0].Line)
	}
	if head.APIVersion != "v1" || (head.Kind != "Secret" && head.Kind != "ConfigMap") {
		return nil, verify.InputErrorf("%s is apiVersion %q kind %q: --supply takes v1 Secrets and ConfigMaps only (the objects Kustomizations substitute from); move it out of the file", where, head.APIVersion, head.Kind)
	}
	id := head.Kind + " " + head.Metadata.Namespace + "/" + head.Metadata.Name
	if head.Metadata.Name == "" || head.Metadata.Namespace == "" {
		return nil, verify.InputErrorf("%s (%s) needs metadata.name and metadata.namespace: a supplied object is applied where its readers look for it", where, id)
	}
	if err := errors.Join(input.ValidName(where+" metadata.name", head.Metadata.Name, head.Kind), input.ValidNamespace(where+" metadata.namespace", head.Metadata.Namespace)); err != nil {
		return nil, err
	}
	raw, err := yaml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	s := &Supplied{Kind: head.Kind, Namespace: head.Metadata.Namespace, Name: head.Metadata.Name, From: where, Encrypted: !head.Sops.IsZero(), raw: raw}
	if !s.Encrypted {
		if err := s.decode(raw); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Decrypt decrypts an encrypted supplied object with dec (no-op for a
// plain one, or one decrypted already).
func (s *Supplied) Decrypt(dec Decrypter) error {
	if s.Object != nil {
		return nil
	}
	if dec == nil {
		return verify.InputErrorf("%s (%s) is SOPS-encrypted: give the age key (--age-key-file FILE, $SOPS_AGE_KEY, $SOPS_AGE_KEY_FILE) or supply it decrypted", s.From, s.Key())
	}
	plain, err := dec.DecryptYAML(s.raw)
	if err != nil {
		return verify.InputErrorf("%s (%s) does not decrypt with the age key: %v", s.From, s.Key(), err)
	}
	return s.decode(plain)
}

func (s *Supplied) decode(y []byte) error {
	js, err := sigsyaml.YAMLToJSON(y)
	if err != nil {
		return verify.InputErrorf("%s (%s) is not a valid %s", s.From, s.Key(), s.Kind)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		return verify.InputErrorf("%s (%s) is not a valid %s", s.From, s.Key(), s.Kind)
	}
	unstructured.RemoveNestedField(u.Object, "sops")
	// Typed, as the API server reads it (data base64, string values).
	var typed any = &corev1.ConfigMap{}
	if s.Kind == "Secret" {
		typed = &corev1.Secret{}
	}
	if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed) != nil {
		return verify.InputErrorf("%s (%s) is not a valid %s (a data value that is not base64, or not a string): fix it", s.From, s.Key(), s.Kind)
	}
	if err := apply.Normalize(u); err != nil {
		return verify.InputErrorf("%s (%s) is not a valid %s", s.From, s.Key(), s.Kind)
	}
	s.Object = u
	return nil
}

var yamlLineRe = regexp.MustCompile(`line \d+`)

// yamlLine is the "line N" of a YAML error, never the text around it.
func yamlLine(err error) string {
	if m := yamlLineRe.FindString(err.Error()); m != "" {
		return m
	}
	return "no line"
}
