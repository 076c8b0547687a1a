package fluxrepo

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/resource"
)

// Secrets made at runtime by a controller from an object the repository
// renders: the object counts as rendering the Secret, with the keys it
// declares. The rules are each project's own API:
//   - external-secrets' ExternalSecret (external-secrets.io): the target is
//     spec.target.name (default metadata.name); its keys are
//     spec.data[].secretKey and spec.target.template.data's keys;
//     spec.dataFrom and spec.target.template.templateFrom add keys the
//     repository does not show.
//   - Bitnami's SealedSecret (bitnami.com): the Secret is
//     spec.template.metadata.name (default metadata.name), its keys those of
//     spec.encryptedData and spec.template.data.

// madeSecret is the Secret a secret-making object r renders, or nil when r
// is no such object.
func madeSecret(r *resource.Resource, ns string) *Data {
	group, _, _ := strings.Cut(r.GetApiVersion(), "/")
	m, err := r.Map()
	if err != nil {
		return nil
	}
	// No copies: kyaml's numbers are int, which the Nested* deep copies
	// refuse (a substituted value may read as a number).
	field := func(fields ...string) any { v, _, _ := unstructured.NestedFieldNoCopy(m, fields...); return v }
	keysOf := func(fields ...string) []string {
		v, _ := field(fields...).(map[string]any)
		return slices.Collect(maps.Keys(v))
	}
	list := func(fields ...string) []any { v, _ := field(fields...).([]any); return v }
	var d *Data
	switch {
	case r.GetKind() == "ExternalSecret" && group == "external-secrets.io":
		name, _, _ := unstructured.NestedString(m, "spec", "target", "name")
		if name == "" {
			name = r.GetName()
		}
		d = &Data{Kind: "Secret", Namespace: ns, Name: name, MadeBy: "ExternalSecret " + ns + "/" + r.GetName(), Values: map[string]string{}}
		data := list("spec", "data")
		for _, item := range data {
			if im, ok := item.(map[string]any); ok {
				if k, ok := im["secretKey"].(string); ok && k != "" {
					d.Values[k] = madeValue
				}
			}
		}
		for _, k := range keysOf("spec", "target", "template", "data") {
			d.Values[k] = madeValue
		}
		// external-secrets puts the template's labels on the Secret.
		d.Labels, _, _ = unstructured.NestedStringMap(m, "spec", "target", "template", "metadata", "labels")
		from, tf := list("spec", "dataFrom"), list("spec", "target", "template", "templateFrom")
		d.Open = len(from) > 0 || len(tf) > 0
	case r.GetKind() == "SealedSecret" && group == "bitnami.com":
		name, _, _ := unstructured.NestedString(m, "spec", "template", "metadata", "name")
		if name == "" {
			name = r.GetName()
		}
		d = &Data{Kind: "Secret", Namespace: ns, Name: name, MadeBy: "SealedSecret " + ns + "/" + r.GetName(), Values: map[string]string{}}
		// The controller puts the template's labels on the Secret.
		d.Labels, _, _ = unstructured.NestedStringMap(m, "spec", "template", "metadata", "labels")
		for _, k := range append(keysOf("spec", "encryptedData"), keysOf("spec", "template", "data")...) {
			d.Values[k] = madeValue
		}
	}
	return d
}

// madeValue stands for a value only the cluster will hold.
const madeValue = "<made at runtime>"

// Describe says where d comes from, for messages: its file, or the object
// making it.
func (d *Data) Describe() string {
	if d.MadeBy != "" {
		return fmt.Sprintf("made by %s (%s)", d.MadeBy, d.Location)
	}
	return d.Location.String()
}

// Placeholder says whether v stands for a value the check cannot read: an
// encrypted, undecodable or runtime-made value, or a prerequisite's.
func Placeholder(v string) bool {
	switch v {
	case encryptedValue, undecodableValue, madeValue, PrerequisiteValue:
		return true
	}
	return false
}

// The placeholders of values the check cannot read.
const (
	encryptedValue   = "<encrypted>"
	undecodableValue = "<undecodable>"
	// PrerequisiteValue stands for a value a prerequisite will hold.
	PrerequisiteValue = "<prerequisite>"
)
