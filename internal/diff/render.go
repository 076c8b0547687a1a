package diff

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	fluxkustomize "github.com/fluxcd/pkg/kustomize"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
)

// ObjectKey names an object as the cluster does, after substitution:
// API group (empty for the core group), kind, namespace, name.
type ObjectKey struct {
	Group     string `json:"group,omitempty"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// String is "Kind namespace/name" ("Kind name" cluster-scoped), the group
// after the kind when not the core group ("Deployment.apps ns/name").
func (k ObjectKey) String() string {
	kind := k.Kind
	if k.Group != "" {
		kind += "." + k.Group
	}
	if k.Namespace == "" {
		return kind + " " + k.Name
	}
	return kind + " " + k.Namespace + "/" + k.Name
}

func keyOf(u *unstructured.Unstructured) ObjectKey {
	gvk := u.GroupVersionKind()
	return ObjectKey{Group: gvk.Group, Kind: gvk.Kind, Namespace: u.GetNamespace(), Name: u.GetName()}
}

// rendered is one Kustomization's objects at one revision, as
// kustomize-controller applies them: built, then substituted.
type rendered struct {
	objs map[ObjectKey]*unstructured.Unstructured
	// fail is why the controller would apply nothing of it: its build or
	// its post-build substitution fails ("" when it applies).
	fail string
}

// substitution is how one environment substitutes: the release's mode.
type substitution struct {
	strict bool
	why    string
}

// render substitutes every built object of k as kustomize-controller
// does before it applies (v1.9.x, kustomization_controller.go build:
// fluxcd/pkg/kustomize.SubstituteVariables on each object, strict as the
// release runs it, an object labelled or annotated
// kustomize.toolkit.fluxcd.io/substitute: disabled left as built),
// answering substituteFrom from data (the ConfigMaps and Secrets the
// environment renders). A substituteFrom object the environment does not
// render is made optional, and the names only it could define are
// assumed defined (fluxrepo.PrerequisiteValue), as check does: its
// prerequisite is check.knobs' finding, not a change.
// rd reads each object (nil: toUnstructured, each anew).
func render(ctx context.Context, env *fluxrepo.Env, data map[string]*fluxrepo.Data, k *fluxrepo.Kustomization, sub substitution, rd *objReads) (*rendered, error) {
	out := &rendered{objs: map[ObjectKey]*unstructured.Unstructured{}}
	var uobj map[string]any
	var always bool
	// The window's render answers from data (the objects at base).
	cl := fluxrepo.DataClient{Env: env, Data: data}
	// shared: the call is the one the environment makes (Env.Substituted:
	// its data, not strict, every substituteFrom object rendered with its
	// keys), whose answers the load already has for the objects it ingests.
	shared := data == nil && !sub.strict
	if data == nil {
		data = env.Data
	}
	if k.Substitutes() {
		kc := k.DeepCopy()
		unknown := false
		for i, ref := range kc.Spec.PostBuild.SubstituteFrom {
			// Softened by what the environment renders (env.Data), not by
			// the window's data: an object absent only in the window (new
			// at head) is absent for the controller too, which then fails
			// a required reference ("substitute from 'ConfigMap/x' error:
			// … not found", fluxcd/pkg/kustomize LoadVariables).
			d := env.Data[fluxrepo.DataKey(ref.Kind, k.Namespace, ref.Name)]
			if d == nil || d.Open {
				shared = false
				kc.Spec.PostBuild.SubstituteFrom[i].Optional = true
				unknown = unknown || d != nil || !ref.Optional
			}
		}
		if unknown {
			defined := map[string]bool{}
			for _, ref := range kc.Spec.PostBuild.SubstituteFrom {
				if d := data[fluxrepo.DataKey(ref.Kind, k.Namespace, ref.Name)]; d != nil {
					for n := range d.Values {
						defined[n] = true
					}
				}
			}
			if kc.Spec.PostBuild.Substitute == nil {
				kc.Spec.PostBuild.Substitute = map[string]string{}
			}
			for n := range k.Names() {
				if _, inline := kc.Spec.PostBuild.Substitute[n]; !inline && !defined[n] {
					kc.Spec.PostBuild.Substitute[n] = fluxrepo.PrerequisiteValue
				}
			}
		}
		var err error
		if uobj, err = runtime.DefaultUnstructuredConverter.ToUnstructured(kc); err != nil {
			return nil, err
		}
		always = kc.GetSubstituteStrategy() == kustomizev1.SubstituteStrategyAlways
	}
	// plainOK: an object without "$" went through the controller's code
	// without an error. Then another one would too and come out as it
	// went in: SubstituteVariables (fluxcd/pkg/kustomize v1.35.6
	// kustomize_varsub.go) loads the Kustomization's variables and checks
	// their names — the same for every object of it — and runs envsubst
	// over the object's YAML, which outside an expression escapes only
	// "$" (envsubst v1.7.1 parse.go: escapeChars = dollar), so a text
	// without one stays as it is; what it returns is that text read back
	// through JSON, which is what toUnstructured reads of the object
	// itself (TestPlainObjectsAsSubstituted holds the fixtures to it).
	plainOK := false
	for _, r := range k.Resources {
		if plainOK && !fluxrepo.WritesDollar(r) {
			if u, err := rd.read(r); err == nil {
				out.objs[keyOf(u)] = u
				continue
			}
			// Unreadable: the controller's words, below.
		}
		res := r
		if k.Substitutes() {
			var s *resource.Resource
			var err error
			if shared {
				s, err = env.Substituted(k, r)
			} else {
				s, err = fluxkustomize.SubstituteVariables(ctx, cl, unstructured.Unstructured{Object: uobj}, r.DeepCopy(),
					fluxkustomize.SubstituteWithStrict(sub.strict), fluxkustomize.SubstituteWithAlways(always))
			}
			if err != nil {
				// kustomize-controller's words (kustomization_controller.go build).
				out.fail = fmt.Sprintf("post build failed for '%s': %v", resName(r), err)
				return out, nil
			}
			if s != nil { // nil: substitution disabled on it
				res = s
			}
			plainOK = plainOK || !fluxrepo.WritesDollar(r)
		}
		u, err := rd.read(res)
		if err != nil {
			// One object the controller cannot read fails its Kustomization,
			// not the report.
			out.fail = fmt.Sprintf("reading '%s' failed: %v", resName(r), err)
			return out, nil
		}
		out.objs[keyOf(u)] = u
	}
	return out, nil
}

func resName(r *resource.Resource) string {
	if r.GetNamespace() == "" {
		return r.GetKind() + "/" + r.GetName()
	}
	return r.GetKind() + "/" + r.GetNamespace() + "/" + r.GetName()
}

func toUnstructured(r *resource.Resource) (*unstructured.Unstructured, error) {
	// Through JSON, as the API machinery reads objects (fluxrepo does the same).
	b, err := r.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.CurId(), err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		return nil, fmt.Errorf("%s: %w", r.CurId(), err)
	}
	// Its metadata as kustomize-controller applies it (a label that is
	// no string drops every label).
	fluxrepo.AsApplied(u.Object)
	return u, nil
}

// redactor hides secret values: Secret data/stringData, and every
// SOPS-encrypted value (ENC[…]) and SOPS metadata block of any object,
// replaced by a keyed hash (HMAC-SHA256 under a key made for this run, so
// equal values compare equal within one diff and cannot be guessed from
// the output).
type redactor struct{ key []byte }

func newRedactor() *redactor {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return &redactor{key: k}
}

func (r *redactor) mark(v string) string {
	m := hmac.New(sha256.New, r.key)
	m.Write([]byte(v))
	return "<redacted: hmac-sha256 " + hex.EncodeToString(m.Sum(nil))[:16] + ">"
}

// redact returns a copy of u safe to print.
func (r *redactor) redact(u *unstructured.Unstructured) *unstructured.Unstructured {
	c := u.DeepCopy()
	if sops, ok := c.Object["sops"]; ok {
		b, _ := yaml.Marshal(sops)
		c.Object["sops"] = r.mark(string(b))
	}
	if gvk := c.GroupVersionKind(); gvk.Group == "" && gvk.Kind == "Secret" {
		for _, f := range []string{"data", "stringData"} {
			if m, ok := c.Object[f].(map[string]any); ok {
				for _, key := range slices.Collect(maps.Keys(m)) {
					m[key] = r.mark(fmt.Sprint(m[key]))
				}
			}
		}
	}
	c.Object = r.walk(c.Object).(map[string]any)
	return c
}

// walk replaces every SOPS-encrypted string value (ENC[…]) under v.
func (r *redactor) walk(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			t[k] = r.walk(x)
		}
	case []any:
		for i, x := range t {
			t[i] = r.walk(x)
		}
	case string:
		if strings.HasPrefix(t, "ENC[") {
			return r.mark(t)
		}
	}
	return v
}

// yamlOf is the object as YAML with sorted keys (redacted).
func (r *redactor) yamlOf(u *unstructured.Unstructured) string {
	if u == nil {
		return ""
	}
	b, err := yaml.Marshal(r.redact(u).Object)
	if err != nil {
		return fmt.Sprintf("# cannot be written as YAML: %v\n", err)
	}
	return string(b)
}
