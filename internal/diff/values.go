package diff

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/chartutil"
	"github.com/go-logr/logr"
	"github.com/pmezard/go-difflib/difflib"
	"helm.sh/helm/v4/pkg/chart/common"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
)

// Upgraded is the change of an object whose rendered form is the same at
// both revisions but whose controller acts on it all the same: a
// HelmRelease whose composed values change through valuesFrom.
const Upgraded = "upgraded"

// Values are a HelmRelease's values as helm-controller composes them
// (valuesFrom merged in order, then spec.values), compared between the
// revisions.
type Values struct {
	// Diff is the unified diff of the composed values (YAML, sorted keys);
	// every value a Secret gives is a keyed hash, never its text.
	Diff string `json:"diff,omitempty"`
	// Notes say which parts are unknown offline (a ConfigMap or Secret the
	// repository does not render, a SOPS-encrypted Secret).
	Notes []string `json:"notes,omitempty"`
	// Fail is helm-controller's error composing the values at head: it
	// does not upgrade (a missing non-optional reference or key).
	Fail string `json:"fail,omitempty"`
}

// composed is one side's composition of one HelmRelease.
type composed struct {
	values map[string]any // redacted; nil when fail
	notes  []string
	fail   string
}

// valuesSource answers valuesFrom at one side: the ConfigMaps and Secrets
// the environment's Kustomizations render (as applied: substituted).
type valuesSource struct {
	objs map[ObjectKey]*unstructured.Unstructured
	env  *fluxrepo.Env
	// pruned are objects the base renders and the head does not, which
	// kustomize-controller deletes: NotFound for helm-controller. One
	// removed but left on the cluster is in objs, as at base.
	pruned map[ObjectKey]bool
	left   map[ObjectKey]bool
}

// valuesSourceOf collects side s's ConfigMaps and Secrets, rendering every
// Kustomization not yet rendered (renderOf caches: compare renders them
// all anyway).
func valuesSourceOf(ctx context.Context, s *side) (*valuesSource, error) {
	vs := &valuesSource{objs: map[ObjectKey]*unstructured.Unstructured{}, env: s.env, pruned: map[ObjectKey]bool{}, left: map[ObjectKey]bool{}}
	if s.env == nil {
		return vs, nil
	}
	for _, k := range s.kustomizations() {
		r, err := s.renderOf(ctx, k)
		if err != nil {
			return nil, err
		}
		for key, u := range r.objs {
			if key.Group == "" && (key.Kind == "ConfigMap" || key.Kind == "Secret") {
				vs.objs[key] = u
			}
		}
	}
	return vs, nil
}

// compose is what helm-controller v1.6.4 makes of hr's values
// (internal/controller/helmrelease_controller.go reconcileRelease:
// chartutil.ChartValuesFromReferences(ctx, log, client, hr.Namespace,
// hr.GetValues(), hr.Spec.ValuesFrom...), fluxcd/pkg/chartutil v1.27.2,
// the version it requires). The function itself is called, with a client
// serving the objects the repository renders; a reference to an object it
// does not render (made out of band: ExternalSecrets, by hand) or cannot
// read (SOPS-encrypted) is left out and said, and Secret values are
// replaced by keyed hashes before they are merged (redactSecret).
func (vs *valuesSource) compose(ctx context.Context, hr *helmv2.HelmRelease, red *redactor) composed {
	var c composed
	cl := &objectClient{objs: map[ObjectKey]kubeclient.Object{}}
	var refs []meta.ValuesReference
	for _, ref := range hr.Spec.ValuesFrom {
		if ref.Kind != "ConfigMap" && ref.Kind != "Secret" {
			refs = append(refs, ref) // the controller refuses it: said as its error
			continue
		}
		key := ObjectKey{Kind: ref.Kind, Namespace: hr.Namespace, Name: ref.Name}
		u := vs.objs[key]
		switch {
		case vs.pruned[key]:
			c.notes = append(c.notes, fmt.Sprintf("%s %s/%s is removed at head and pruned: helm-controller does not find it", ref.Kind, key.Namespace, key.Name))
			refs = append(refs, ref) // NotFound: the controller's own answer
			continue
		case vs.left[key]:
			c.notes = append(c.notes, fmt.Sprintf("%s %s/%s is removed at head but left on the cluster (not pruned): its values as at base", ref.Kind, key.Namespace, key.Name))
		}
		if u == nil {
			c.notes = append(c.notes, vs.unknown(key)+": merged values unknown for that part")
			continue
		}
		if _, sops := u.Object["sops"]; sops {
			c.notes = append(c.notes, fmt.Sprintf("values from %s %s/%s are SOPS-encrypted (decrypted by kustomize-controller when applied): merged values unknown for that part", ref.Kind, key.Namespace, key.Name))
			continue
		}
		if _, done := cl.objs[key]; !done {
			obj, err := typed(u, hr, red)
			if err != nil {
				why := "does not decode"
				if ref.Kind == "ConfigMap" {
					why += " (" + err.Error() + ")" // a Secret's error may quote its data
				}
				c.notes = append(c.notes, fmt.Sprintf("%s %s/%s %s: merged values unknown for that part", ref.Kind, key.Namespace, key.Name, why))
				continue
			}
			cl.objs[key] = obj
		}
		refs = append(refs, ref)
	}
	vals, err := chartutil.ChartValuesFromReferences(ctx, logr.Discard(), cl, hr.Namespace, hr.GetValues(), refs...)
	if err != nil {
		c.fail = err.Error()
		return c
	}
	// SOPS-encrypted text in a ConfigMap or in spec.values is hidden too.
	c.values = red.walk(map[string]any(vals)).(map[string]any)
	return c
}

// unknown says why key is not answered from the repository.
func (vs *valuesSource) unknown(key ObjectKey) string {
	what := fmt.Sprintf("values from %s %s/%s", key.Kind, key.Namespace, key.Name)
	if vs.env != nil {
		if d := vs.env.Data[fluxrepo.DataKey(key.Kind, key.Namespace, key.Name)]; d != nil && d.MadeBy != "" {
			return what + " made at runtime by " + d.MadeBy
		}
	}
	return what + " not in the repository"
}

// typed is the ConfigMap or Secret u as the API server serves it: a
// Secret's stringData merged into data (the API server does so on write),
// every Secret value a key of hr reads replaced by redactSecret.
func typed(u *unstructured.Unstructured, hr *helmv2.HelmRelease, red *redactor) (kubeclient.Object, error) {
	obj, err := served(u)
	s, ok := obj.(*corev1.Secret)
	if err != nil || !ok {
		return obj, err
	}
	// How hr reads each key: as a values document (merged) or as one
	// value at a targetPath.
	asDocument := map[string]bool{}
	for _, ref := range hr.Spec.ValuesFrom {
		if ref.Kind == "Secret" && ref.Name == s.Name && ref.TargetPath == "" {
			asDocument[ref.GetValuesKey()] = true
		}
	}
	for k, v := range s.Data {
		s.Data[k] = redactSecret(v, asDocument[k], red)
	}
	return s, nil
}

// served is the ConfigMap or Secret u as the API server serves it: a
// Secret's stringData merged into data (the API server does so on write;
// stringData wins).
func served(u *unstructured.Unstructured) (kubeclient.Object, error) {
	if u.GetKind() == "ConfigMap" {
		cm := &corev1.ConfigMap{}
		return cm, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cm)
	}
	s := &corev1.Secret{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, s); err != nil {
		return nil, err
	}
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
	return s, nil
}

// redactSecret is a Secret value with its text replaced by keyed hashes,
// keeping what the merge depends on: a values document keeps its maps
// (chartutil.MergeMaps merges maps and replaces everything else), each
// other value (a list, a scalar) becomes the hash of its JSON; a value read
// at a targetPath, or a document that does not parse (the controller
// fails it all the same), becomes one hash.
func redactSecret(v []byte, asDocument bool, red *redactor) []byte {
	if asDocument {
		if doc, err := common.ReadValues(v); err == nil {
			if b, err := yaml.Marshal(redactLeaves(map[string]any(doc), red)); err == nil {
				return b
			}
		}
	}
	if len(v) == 0 {
		return v
	}
	return []byte(red.mark(string(v)))
}

func redactLeaves(v any, red *redactor) any {
	if m, ok := v.(map[string]any); ok {
		out := make(map[string]any, len(m))
		for k, x := range m {
			out[k] = redactLeaves(x, red)
		}
		return out
	}
	if v == nil {
		return nil // null says nothing, and Helm reads it as "delete the key"
	}
	b, _ := json.Marshal(v)
	return red.mark(string(b))
}

// objectClient serves Get from the objects the repository renders; every
// other object is NotFound, as on a cluster that lacks it. Only Get is
// called by ChartValuesFromReferences.
type objectClient struct {
	kubeclient.Client
	objs map[ObjectKey]kubeclient.Object
}

func (c *objectClient) Get(_ context.Context, key kubeclient.ObjectKey, obj kubeclient.Object, _ ...kubeclient.GetOption) error {
	var kind string
	switch obj.(type) {
	case *corev1.ConfigMap:
		kind = "ConfigMap"
	case *corev1.Secret:
		kind = "Secret"
	default:
		return fmt.Errorf("objectClient: %T is not served", obj)
	}
	src, ok := c.objs[ObjectKey{Kind: kind, Namespace: key.Namespace, Name: key.Name}]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: strings.ToLower(kind) + "s"}, key.Name)
	}
	switch t := obj.(type) {
	case *corev1.ConfigMap:
		src.(*corev1.ConfigMap).DeepCopyInto(t)
	case *corev1.Secret:
		src.(*corev1.Secret).DeepCopyInto(t)
	}
	return nil
}

// attachValues gives every HelmRelease whose composed values change its
// Values: under its own line when its object changes (or is added with
// valuesFrom), or as an Upgraded object of its Kustomization when only
// what it reads changes (a ConfigMap or Secret, possibly applied by
// another Kustomization). It runs after compare, on every render.
func (c *Cluster) attachValues(ctx context.Context, b, h *side, red *redactor) error {
	bvs, err := valuesSourceOf(ctx, b)
	if err != nil {
		return err
	}
	hvs, err := valuesSourceOf(ctx, h)
	if err != nil {
		return err
	}
	// What a removed ConfigMap or Secret leaves on the cluster
	// (compareObjects said whether kustomize-controller prunes it).
	for _, k := range c.Kustomizations {
		for _, o := range k.Objects {
			if o.Change != Removed || o.Key.Group != "" || (o.Key.Kind != "ConfigMap" && o.Key.Kind != "Secret") || hvs.objs[o.Key] != nil {
				continue
			}
			if o.Pruned {
				hvs.pruned[o.Key] = true
			} else if u := bvs.objs[o.Key]; u != nil {
				hvs.left[o.Key], hvs.objs[o.Key] = true, u
			}
		}
	}
	byRef := map[string]*Kustomization{}
	for _, k := range c.Kustomizations {
		byRef[k.Ref] = k
	}
	hk := h.kustomizations()
	refs := slices.Sorted(maps.Keys(hk))
	// One Kustomization's HelmReleases at a time, side by side: each
	// touches only its own objects (gathered in order below).
	objsOf := make([][]*Object, len(refs))
	err = eachOf(ctx, len(refs), func(i int) error {
		ref := refs[i]
		k := byRef[ref]
		if k != nil && (k.Fail != "" || k.Change == Removed) {
			return nil
		}
		hr := h.rend[ref]
		if hr == nil || hr.fail != "" {
			return nil
		}
		br := b.rend[ref]
		if br != nil && br.fail != "" {
			br = nil // compared with nothing
		}
		var objs []*Object
		if k != nil {
			objs = k.Objects
		}
		objsOf[i] = helmValues(ctx, bvs, hvs, br, hr, objs, red)
		return nil
	})
	if err != nil {
		return err
	}
	for i, ref := range refs {
		k, objs := byRef[ref], objsOf[i]
		if k == nil && len(objs) > 0 {
			k = &Kustomization{Ref: ref, Change: Changed, Prune: hk[ref].Spec.Prune}
			c.Kustomizations = append(c.Kustomizations, k)
		}
		if k != nil && objs != nil {
			k.Objects = objs
		}
	}
	slices.SortFunc(c.Kustomizations, func(a, b *Kustomization) int { return strings.Compare(a.Ref, b.Ref) })
	return nil
}

// helmValues attaches the composed values to the HelmReleases of one
// Kustomization (objs: its objects compareObjects found; br, hr: its
// renders at base and head) and adds, as Upgraded, each HelmRelease whose
// object is unchanged but whose composed values change. The result is
// sorted as compareObjects sorts.
func helmValues(ctx context.Context, bvs, hvs *valuesSource, br, hr *rendered, objs []*Object, red *redactor) []*Object {
	byKey := map[ObjectKey]*Object{}
	for _, o := range objs {
		byKey[o.Key] = o
	}
	for _, k := range slices.Collect(maps.Keys(hr.objs)) {
		if k.Group != helmGroup || k.Kind != "HelmRelease" {
			continue
		}
		o := byKey[k]
		if o != nil && o.Change == Removed {
			continue
		}
		hh := toHelmRelease(hr.objs[k])
		if hh == nil {
			continue
		}
		var bh *helmv2.HelmRelease
		if br != nil && br.objs[k] != nil {
			bh = toHelmRelease(br.objs[k])
		}
		if o == nil && (bh == nil || len(hh.Spec.ValuesFrom) == 0) {
			continue // unchanged, and nothing outside it gives it values
		}
		if o != nil && o.Change == Added && len(hh.Spec.ValuesFrom) == 0 {
			continue // its spec.values are in the object's diff
		}
		hc := hvs.compose(ctx, hh, red)
		var bc composed
		if bh != nil {
			bc = bvs.compose(ctx, bh, red)
		}
		if bh != nil && bc.fail == "" && hc.fail == "" && equality.Semantic.DeepEqual(bc.values, hc.values) {
			continue // the composed values do not change
		}
		if o == nil && bc.fail != "" && bc.fail == hc.fail {
			continue // failing alike at both revisions: nothing changes
		}
		v := &Values{Notes: hc.notes, Fail: hc.fail}
		for _, n := range bc.notes {
			if !slices.Contains(hc.notes, n) {
				v.Notes = append(v.Notes, "base: "+n)
			}
		}
		if bc.fail != "" {
			v.Notes = append(v.Notes, "base: helm-controller failed composing the values: "+bc.fail)
		}
		if hc.fail == "" {
			v.Diff = valuesDiff(k, bc.values, hc.values)
		}
		if o == nil {
			o = &Object{Key: k, Change: Upgraded, Action: "Helm upgrade (values from valuesFrom: " + valuesFromNames(hh) + ")"}
			objs = append(objs, o)
		}
		if hc.fail != "" {
			// reconcileRelease marks it Ready=False, reason ValuesError.
			o.Action += "; FAIL helm-controller does not upgrade (ValuesError): " + hc.fail
		}
		o.Values = v
	}
	slices.SortFunc(objs, func(a, b *Object) int {
		return strings.Compare(a.Key.Group+"\x00"+a.Key.Kind+"\x00"+a.Key.Namespace+"\x00"+a.Key.Name, b.Key.Group+"\x00"+b.Key.Kind+"\x00"+b.Key.Namespace+"\x00"+b.Key.Name)
	})
	return objs
}

func toHelmRelease(u *unstructured.Unstructured) *helmv2.HelmRelease {
	hr := &helmv2.HelmRelease{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, hr); err != nil {
		return nil // check reports a HelmRelease that does not decode
	}
	return hr
}

func valuesFromNames(hr *helmv2.HelmRelease) string {
	var out []string
	for _, r := range hr.Spec.ValuesFrom {
		out = append(out, r.Kind+" "+hr.Namespace+"/"+r.Name)
	}
	return strings.Join(out, ", ")
}

// valuesDiff is the unified diff of the composed values (sorted keys).
func valuesDiff(k ObjectKey, b, h map[string]any) string {
	text := func(v map[string]any) string {
		if v == nil {
			return ""
		}
		out, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Sprintf("# cannot be written as YAML: %v\n", err)
		}
		return string(out)
	}
	from := text(b)
	s, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: lines(from), B: lines(text(h)),
		FromFile: "base/" + k.String() + " values", ToFile: "head/" + k.String() + " values", Context: 3,
	})
	if err != nil {
		return fmt.Sprintf("# no diff: %v\n", err)
	}
	return s
}

// writeValues writes o's composed values under its line.
func writeValues(b *strings.Builder, o *Object) {
	v := o.Values
	if v == nil {
		return
	}
	fmt.Fprintf(b, "    values as helm-controller composes them (valuesFrom, then spec.values):\n")
	for _, n := range v.Notes {
		fmt.Fprintf(b, "    note: %s\n", n)
	}
	if v.Fail != "" {
		fmt.Fprintf(b, "    FAIL %s\n", v.Fail)
	}
	b.WriteString(v.Diff)
}
