package rootsync

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/resource"

	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// SeedNote is what the plan says of a seed.
const SeedNote = "seeded for the root's first reconcile"

// Seed is an object the root Kustomization substitutes from
// (spec.postBuild.substituteFrom, not optional) that only the root's own
// tree renders. kustomize-controller v1.9.5 loads every substituteFrom
// object before it applies anything (fluxcd/pkg/kustomize
// SubstituteVariables: a missing one that is not optional fails the
// build), so the root could never apply it: the bootstrap a repository
// declares outside Flux (a Taskfile's `kubectl apply` of its vars) writes
// it first, and so does sync, as the root will apply it.
type Seed struct {
	Kind, Namespace, Name string
	// Location is where the repository declares it.
	Location fluxrepo.Location
	// Encrypted: a SOPS-encrypted Secret, decrypted with the age key.
	Encrypted bool
	// Object is what is applied: built from the repository as the root
	// renders it, with the root's owner labels; nil until built (an
	// encrypted seed needs the key). Its values are never printed.
	Object *unstructured.Unstructured
	// SuppliedFrom names the --supply document that replaces the
	// repository's (""; then Object is that document's).
	SuppliedFrom string

	res *resource.Resource
}

// Key is kind/namespace/name.
func (s *Seed) Key() string { return fluxrepo.DataKey(s.Kind, s.Namespace, s.Name) }

// Keys are the names of the seed's data (never its values); the
// repository's when not built yet.
func (s *Seed) Keys() []string {
	if s.Object == nil {
		return nil
	}
	return dataKeys(s.Object)
}

// SelectSeeds lists the seeds of env's root, in its substituteFrom order:
// each object the root substitutes from, not optional, that the
// environment renders and only the root applies (fluxrepo Data.AppliedBy
// is the root), and that the repository itself holds (not a Secret an
// ExternalSecret or a SealedSecret makes at runtime: its controller is not
// there before the root).
func SelectSeeds(env *fluxrepo.Env) []*Seed {
	root := env.Root
	if root == nil || !root.Built || !root.Substitutes() {
		return nil
	}
	var out []*Seed
	for _, ref := range root.Spec.PostBuild.SubstituteFrom {
		key := fluxrepo.DataKey(ref.Kind, root.Namespace, ref.Name)
		d := env.Data[key]
		if ref.Optional || d == nil || d.AppliedBy != root.Ref() || d.MadeBy != "" ||
			slices.ContainsFunc(out, func(s *Seed) bool { return s.Key() == key }) {
			continue
		}
		i := slices.IndexFunc(root.Resources, func(r *resource.Resource) bool {
			return r.GetKind() == ref.Kind && r.GetName() == ref.Name &&
				fluxobj.NamespaceOr(r.GetNamespace(), env.Options.Namespace) == root.Namespace
		})
		if i < 0 {
			continue
		}
		out = append(out, &Seed{Kind: ref.Kind, Namespace: root.Namespace, Name: ref.Name, Location: d.Location, Encrypted: d.Encrypted, res: root.Resources[i]})
	}
	return out
}

// Decrypter decrypts one SOPS-encrypted object written as JSON (as
// kustomize-controller decrypts a built object) or YAML (a file given to
// the tool): agekey.Identities, the tool's one decryption path.
type Decrypter interface {
	DecryptJSON(data []byte) ([]byte, error)
	DecryptYAML(data []byte) ([]byte, error)
}

// macHint explains a MAC mismatch of a built object: kustomize-controller
// decrypts it as JSON (kyaml's Resource.MarshalJSON: keys sorted), so a
// file encrypted with its keys in another order fails in the controller
// the same way.
func macHint(err error) string {
	if !strings.Contains(err.Error(), "MAC mismatch") {
		return ""
	}
	return " (kustomize-controller decrypts the object as JSON, its keys sorted — apiVersion, data or stringData, kind, metadata, type — so a file encrypted with its keys in another order fails in the controller too: re-encrypt it with its keys in that order, as kubectl writes them)"
}

// build makes the seed's object as the root applies it: a plain object
// with the root's substitution as the repository model reads it
// (fluxrepo.Env.Applied), a SOPS-encrypted Secret decrypted with dec as
// the controller decrypts it; then the root's owner labels and the
// controller's normalization (apply.AsKustomization). An error names the
// object and its file, never a value.
func (s *Seed) build(env *fluxrepo.Env, dec Decrypter) error {
	root := env.Root
	r := s.res
	if !s.Encrypted {
		r = env.Applied(root, r)
	}
	data, err := r.MarshalJSON()
	if err != nil {
		return fmt.Errorf("%s (%s): %w", s.Key(), s.Location, err)
	}
	if s.Encrypted {
		if dec == nil {
			return verify.InputErrorf("%s (%s) is SOPS-encrypted and only the root %s applies it: give the age key (--age-key-file FILE or -, $SOPS_AGE_KEY, $SOPS_AGE_KEY_FILE) so it is seeded decrypted, or --supply FILE holding it", s.Key(), s.Location, root.Ref())
		}
		if data, err = dec.DecryptJSON(data); err != nil {
			return verify.InputErrorf("%s (%s) does not decrypt with the age key: %v%s; give the key it is encrypted to, or --supply FILE holding it", s.Key(), s.Location, err, macHint(err))
		}
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return fmt.Errorf("%s (%s): %w", s.Key(), s.Location, err)
	}
	u.SetNamespace(s.Namespace)
	if err := apply.AsKustomization([]*unstructured.Unstructured{u}, root.Namespace, root.Name); err != nil {
		return fmt.Errorf("%s (%s): %w", s.Key(), s.Location, err)
	}
	s.Object = u
	return nil
}

// dataKeys are the keys of a ConfigMap's or Secret's data, stringData and
// binaryData, sorted: names only.
func dataKeys(u *unstructured.Unstructured) []string {
	keys := map[string]bool{}
	for _, f := range []string{"data", "stringData", "binaryData"} {
		m, _, _ := unstructured.NestedFieldNoCopy(u.Object, f)
		if mm, ok := m.(map[string]any); ok {
			for k := range mm {
				keys[k] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(keys))
}
