package fluxrepo

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
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
		d = &Data{Kind: "Secret", Namespace: ns, Name: name, MadeBy: "ExternalSecret " + ns + "/" + r.GetName(), FromManager: true, Values: map[string]string{}}
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
	case r.GetKind() == "Terraform" && group == "infra.contrib.fluxcd.io":
		name, _, _ := unstructured.NestedString(m, "spec", "writeOutputsToSecret", "name")
		if name == "" {
			return nil
		}
		d = &Data{Kind: "Secret", Namespace: ns, Name: name, MadeBy: "Terraform " + ns + "/" + r.GetName(), Values: map[string]string{}}
		outputs, _, _ := unstructured.NestedStringSlice(m, "spec", "writeOutputsToSecret", "outputs")
		for _, o := range outputs {
			// "output:key" renames an output (tofu-controller's
			// writeOutputsToSecret: the key is what follows the colon).
			_, key, renamed := strings.Cut(o, ":")
			if !renamed {
				key = o
			}
			d.Values[key] = madeValue
		}
		// No outputs listed: every output of the module, which the
		// repository does not show.
		d.Open = len(outputs) == 0
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

// Made by a cluster-scoped or infrastructure controller from what the
// repository renders, counted as rendered by the object's applier:
//   - external-secrets' ClusterExternalSecret (external-secrets.io): an
//     ExternalSecret named spec.externalSecretName (default metadata.name)
//     with spec.externalSecretSpec in every namespace of spec.namespaces
//     and every namespace spec.namespaceSelectors (or the older
//     spec.namespaceSelector) select; each makes its Secret as an
//     ExternalSecret does (madeSecret). The namespaces a selector selects
//     are the Namespaces the environment renders with matching labels.
//   - tofu-controller's Terraform (infra.contrib.fluxcd.io):
//     spec.writeOutputsToSecret.name in the Terraform's namespace, its keys
//     spec.writeOutputsToSecret.outputs (every output when none is listed:
//     keys the repository does not show).

// clusterMadeSecrets ingests the Secrets every ClusterExternalSecret the
// environment renders makes, once every build is known (its selectors
// read the Namespaces of them all).
func (l *loader) clusterMadeSecrets() {
	e := l.env
	type built struct {
		res       []*resource.Resource
		files     []string
		appliedBy string
	}
	all := []built{{e.RootResources, e.RootFiles, ""}}
	if e.Root != nil && e.Root.Built {
		all[0].appliedBy = e.Root.Ref()
	}
	for _, k := range e.Kustomizations {
		if k.Built && k != e.Root {
			all = append(all, built{k.Resources, k.Files, k.Ref()})
		}
	}
	namespaces := map[string]map[string]string{} // name -> labels
	for _, b := range all {
		for _, r := range b.res {
			if r.GetKind() == "Namespace" && r.GetApiVersion() == "v1" {
				namespaces[r.GetName()] = r.GetLabels()
			}
		}
	}
	for _, b := range all {
		for _, r := range b.res {
			group, _, _ := strings.Cut(r.GetApiVersion(), "/")
			if r.GetKind() != "ClusterExternalSecret" || group != "external-secrets.io" {
				continue
			}
			applied := l.substituted(b.appliedBy, r)
			for _, ns := range selectedNamespaces(applied, namespaces) {
				if d := cesSecret(applied, ns); d != nil {
					l.ingestData(r.GetName(), "", b.files, b.appliedBy, d)
				}
			}
		}
	}
}

// selectedNamespaces are the namespaces ClusterExternalSecret r makes its
// ExternalSecret in: spec.namespaces, and the rendered namespaces its
// selectors match (external-secrets' clusterexternalsecret controller:
// a namespace is selected when any selector matches it).
func selectedNamespaces(r *resource.Resource, rendered map[string]map[string]string) []string {
	m, err := r.Map()
	if err != nil {
		return nil
	}
	var out []string
	names, _, _ := unstructured.NestedStringSlice(m, "spec", "namespaces")
	out = append(out, names...)
	var sels []any
	if l, ok, _ := unstructured.NestedFieldNoCopy(m, "spec", "namespaceSelectors"); ok {
		sels, _ = l.([]any)
	}
	if one, ok, _ := unstructured.NestedFieldNoCopy(m, "spec", "namespaceSelector"); ok && one != nil {
		sels = append(sels, one)
	}
	for _, s := range sels {
		sm, ok := s.(map[string]any)
		if !ok {
			continue
		}
		var ls metav1.LabelSelector
		if runtime.DefaultUnstructuredConverter.FromUnstructured(sm, &ls) != nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(&ls)
		if err != nil {
			continue
		}
		for _, ns := range slices.Sorted(maps.Keys(rendered)) {
			if sel.Matches(labels.Set(rendered[ns])) {
				out = append(out, ns)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// cesSecret is the Secret the ExternalSecret ClusterExternalSecret r
// makes in namespace ns makes.
func cesSecret(r *resource.Resource, ns string) *Data {
	m, err := r.Map()
	if err != nil {
		return nil
	}
	spec, _, _ := unstructured.NestedMap(m, "spec", "externalSecretSpec")
	name, _, _ := unstructured.NestedString(m, "spec", "externalSecretName")
	if name == "" {
		name = r.GetName()
	}
	es := map[string]any{"apiVersion": r.GetApiVersion(), "kind": "ExternalSecret", "metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec}
	er, err := resource.NewFactory(nil).FromMap(es)
	if err != nil {
		return nil
	}
	d := madeSecret(er, ns)
	if d != nil {
		d.MadeBy = "ClusterExternalSecret " + r.GetName()
	}
	return d
}
