package check

import (
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	ssautils "github.com/fluxcd/pkg/ssa/utils"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// applier is one build that applies objects: a Kustomization of the
// environment, or the root directory when no Kustomization of the
// repository applies it (k nil).
type applier struct {
	k     *fluxrepo.Kustomization
	label string
	path  string
	res   []*resource.Resource
	files []string
	// cluster is where it applies: "" for this cluster, else the
	// spec.kubeConfig it applies through (another cluster: its objects
	// are not this cluster's, however alike).
	cluster string
}

// copyOf is one object as one applier applies it.
type copyOf struct {
	by  *applier
	obj map[string]any // after substitution, build bookkeeping removed
	raw *resource.Resource
	// skipped: an annotation makes kustomize-controller leave the object
	// alone (ssa: Ignore or IfNotPresent, reconcile: disabled).
	skipped bool
}

// appliersOf lists the builds that apply objects. The root directory is
// applied by the root Kustomization (its Resources are the root build, as
// RootResources): counted once, as that Kustomization; on its own only when
// the environment has no root Kustomization (one made outside it applies
// the directory).
func appliersOf(env *fluxrepo.Env) []*applier {
	root := path.Clean(filepath.ToSlash(env.Options.Path))
	var out []*applier
	rootApplied := false
	for _, k := range env.Kustomizations {
		if !k.Built {
			continue
		}
		if k.Via == "" && k.Path == root {
			rootApplied = true
		}
		out = append(out, &applier{k: k, label: "Kustomization " + k.Ref(), path: k.Path, res: k.Resources, files: k.Files, cluster: remoteCluster(k)})
	}
	// With a root Kustomization the root directory is its build, whatever
	// its path ([unreachable] reports a root applying another directory).
	if !rootApplied && env.Root == nil && len(env.RootResources) > 0 {
		out = append([]*applier{{label: "the root directory " + root + " (applied by a root made outside the repository)", path: root, res: env.RootResources, files: env.RootFiles}}, out...)
	}
	return out
}

// remoteCluster names the cluster k applies to when spec.kubeConfig sends
// its objects to another one ("" for this cluster): kustomize-controller
// v1.9.5 builds the apply client from that kubeconfig (kustomization
// controller: runtime/client Impersonator with KubeConfig), so the objects
// live on that cluster's API server.
func remoteCluster(k *fluxrepo.Kustomization) string {
	kc := k.Spec.KubeConfig
	if kc == nil {
		return ""
	}
	switch {
	case kc.SecretRef != nil:
		return fmt.Sprintf("the cluster of kubeconfig Secret %s/%s", k.Namespace, kc.SecretRef.Name)
	case kc.ConfigMapRef != nil:
		return fmt.Sprintf("the cluster of kubeconfig ConfigMap %s/%s", k.Namespace, kc.ConfigMapRef.Name)
	}
	return "another cluster"
}

// clusterScopedKinds are the group/kinds the environment's
// CustomResourceDefinitions declare spec.scope: Cluster (true) or
// Namespaced (false).
func clusterScopedKinds(env *fluxrepo.Env) map[string]bool {
	out := map[string]bool{}
	add := func(res []*resource.Resource) {
		for _, r := range res {
			if r.GetKind() != "CustomResourceDefinition" {
				continue
			}
			m, err := r.Map()
			if err != nil {
				continue
			}
			group, _, _ := unstructured.NestedString(m, "spec", "group")
			kind, _, _ := unstructured.NestedString(m, "spec", "names", "kind")
			scope, _, _ := unstructured.NestedString(m, "spec", "scope")
			out[group+"/"+kind] = scope == "Cluster"
		}
	}
	add(env.RootResources)
	for _, k := range env.Kustomizations {
		add(k.Resources)
	}
	return out
}

// clusterScoped says whether the API server keeps r without a namespace:
// a cluster-scoped kind, whose metadata.namespace it clears on create and
// update (apiserver rest.BeforeCreate/BeforeUpdate), so a copy a
// targetNamespace stamped (kustomize assumes an unknown kind namespaced)
// is the same object. The scope is the environment's CRD's, else the
// built-in schema's (kyaml openapi, as kustomize reads it), else — a CRD
// installed outside the repository — the Kubernetes naming convention of
// its kind (ClusterIssuer, ClusterSecretStore, ClusterPolicy).
func clusterScoped(r *resource.Resource, crds map[string]bool) bool {
	group, _, _ := strings.Cut(r.GetApiVersion(), "/")
	if !strings.Contains(r.GetApiVersion(), "/") {
		group = ""
	}
	if scope, ok := crds[group+"/"+r.GetKind()]; ok {
		return scope
	}
	if ns, found := openapi.IsNamespaceScoped(kyaml.TypeMeta{APIVersion: r.GetApiVersion(), Kind: r.GetKind()}); found {
		return !ns
	}
	return strings.HasPrefix(r.GetKind(), "Cluster")
}

// objectID is an object's identity to the API server: group, kind,
// namespace and name, as applied.
func objectID(r *resource.Resource) string {
	group := ""
	if g, _, ok := strings.Cut(r.GetApiVersion(), "/"); ok {
		group = g
	}
	id := r.GetKind()
	if group != "" {
		id += "." + group
	}
	if ns := r.GetNamespace(); ns != "" {
		return id + " " + ns + "/" + r.GetName()
	}
	return id + " " + r.GetName()
}

// checkAppliers is the [two-appliers] detector: an object (group, kind,
// namespace, name after substitution) applied by two Kustomizations of the
// environment. Its findings join check.graph (cs's check of that ID): who
// applies what is the graph's business.
//
// kustomize-controller v1.9.5 (internal/controller/kustomization_controller.go)
// applies every object with server-side apply under one field manager, the
// controller's name (apply: ssa.ResourceManager with Owner{Field:
// r.ControllerName}, ApplyAllStaged with Force), and labels it
// kustomize.toolkit.fluxcd.io/name and /namespace of the Kustomization
// applying it (fluxcd/pkg/ssa v0.76 ResourceManager.SetOwnerLabels). Two
// Kustomizations applying one object therefore overwrite each other's
// fields and labels at every reconcile; and prune (deleteObjects:
// ssa.DeleteOptions{Inclusions: manager.GetOwnerLabels(name, namespace)}
// over the objects in the old inventory not in the new, inventory.Diff)
// deletes the object when the Kustomization pruning it is the one whose
// labels it carries at that moment, while the other still declares it.
// Objects annotated kustomize.toolkit.fluxcd.io/ssa: Ignore or
// IfNotPresent, or reconcile: disabled, are left alone by apply
// (ExclusionSelector, IfNotPresentSelector): no finding.
func checkAppliers(ch *checker, o Options, env *fluxrepo.Env, cs []verify.Check) []verify.Check {
	if !o.on(TwoAppliers) {
		return cs
	}
	fs := twoAppliers(env)
	if len(fs) == 0 {
		return cs
	}
	mine := ch.verdict(Graph, fs, "every object applied by one Kustomization only (or allowed by the policy)")
	for i := range cs {
		if cs[i].ID == Graph.ID {
			cs[i] = foldCheck(cs[i], mine)
			return cs
		}
	}
	return append(cs, mine)
}

// foldCheck adds the findings and evidence of add to c (one gate), with the
// worse verdict of the two.
func foldCheck(c, add verify.Check) verify.Check {
	rank := map[verify.Verdict]int{verify.Pass: 0, verify.Warn: 1, verify.Skip: 2, verify.Fail: 3}
	c.Findings = append(c.Findings, add.Findings...)
	switch {
	case add.Verdict == verify.Pass:
		c.Evidence = append(c.Evidence, add.Evidence...)
	case c.Verdict == verify.Pass:
		c.Evidence = append(append([]string{c.Message}, add.Evidence...), c.Evidence...)
		c.Verdict, c.Message = add.Verdict, add.Message
	case rank[add.Verdict] > rank[c.Verdict]:
		c.Evidence = append(c.Evidence, add.Evidence...)
		c.Verdict, c.Message = add.Verdict, add.Message+"; and: "+c.Message
	default:
		c.Evidence = append(c.Evidence, add.Evidence...)
		c.Message += "; and: " + add.Message
	}
	return c
}

// twoAppliers finds the objects several builds apply. The identity is
// read first (substituted only where the name or namespace holds a
// variable); the content is substituted and compared only for objects
// seen twice.
func twoAppliers(env *fluxrepo.Env) []finding {
	type seen struct {
		by *applier
		r  *resource.Resource
	}
	var order []string
	byID := map[string][]seen{}
	crds := clusterScopedKinds(env)
	for _, a := range appliersOf(env) {
		mine := map[string]bool{}
		for _, r := range a.res {
			named := r
			if strings.Contains(r.GetName(), "${") || strings.Contains(r.GetNamespace(), "${") {
				named = env.Applied(a.k, r)
			}
			if named.GetNamespace() != "" && clusterScoped(named, crds) {
				named = named.DeepCopy()
				named.SetNamespace("")
			}
			id := objectID(named)
			if a.cluster != "" {
				id += " on " + a.cluster
			}
			if mine[id] {
				continue
			}
			mine[id] = true
			if _, ok := byID[id]; !ok {
				order = append(order, id)
			}
			byID[id] = append(byID[id], seen{a, r})
		}
	}
	var fs []finding
	for _, id := range order {
		if len(byID[id]) < 2 {
			continue
		}
		var cs []copyOf
		for _, x := range byID[id] {
			applied := env.Applied(x.by.k, x.r)
			m, err := applied.Map()
			if err != nil {
				continue
			}
			withCommonMetadata(x.by.k, m)
			if clusterScoped(applied, crds) {
				unstructured.RemoveNestedField(m, "metadata", "namespace") // cleared by the API server
			}
			cs = append(cs, copyOf{by: x.by, obj: comparable(m), raw: x.r, skipped: leftAlone(applied)})
		}
		if len(cs) < 2 || slices.ContainsFunc(cs, func(c copyOf) bool { return c.skipped }) {
			continue
		}
		fs = append(fs, appliersFinding(env, id, cs))
	}
	return fs
}

// withCommonMetadata sets k's spec.commonMetadata on object m as
// kustomize-controller v1.9.5 does after the build, before it applies
// (kustomization_controller.go build: fluxcd/pkg/ssa utils.SetCommonMetadata).
func withCommonMetadata(k *fluxrepo.Kustomization, m map[string]any) {
	if k == nil || k.Spec.CommonMetadata == nil {
		return
	}
	ssautils.SetCommonMetadata([]*unstructured.Unstructured{{Object: m}}, k.Spec.CommonMetadata.Labels, k.Spec.CommonMetadata.Annotations)
}

// leftAlone says whether kustomize-controller's apply skips the object
// (v1.9.5 apply: ExclusionSelector reconcile: disabled, ssa: Ignore;
// IfNotPresentSelector ssa: IfNotPresent).
func leftAlone(r *resource.Resource) bool {
	a := r.GetAnnotations()
	g := kustomizev1.GroupVersion.Group
	return a[g+"/reconcile"] == kustomizev1.DisabledValue || a[g+"/ssa"] == kustomizev1.IgnoreValue || a[g+"/ssa"] == kustomizev1.IfNotPresentValue
}

// comparable is the object without kustomize's build bookkeeping
// (config.kubernetes.io/ annotations), which the controller does not apply.
func comparable(m map[string]any) map[string]any {
	md, _ := m["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	if len(ann) == 0 {
		return m
	}
	keep := map[string]any{}
	for k, v := range ann {
		if !strings.HasPrefix(k, "config.kubernetes.io/") && !strings.HasPrefix(k, "internal.config.kubernetes.io/") {
			keep[k] = v
		}
	}
	m = maps.Clone(m)
	md = maps.Clone(md)
	if len(keep) == 0 {
		delete(md, "annotations")
	} else {
		md["annotations"] = keep
	}
	m["metadata"] = md
	return m
}

// appliersFinding is the finding of object id applied by every copy's
// applier.
func appliersFinding(env *fluxrepo.Env, id string, cs []copyOf) finding {
	// The outermost path first: the one whose build may include the others.
	sort.SliceStable(cs, func(i, j int) bool { return depth(cs[i].by.path) < depth(cs[j].by.path) })
	var names []string
	loc := fluxrepo.Location{}
	locs := map[string]bool{}
	for _, c := range cs {
		l := env.Locate(c.by.files, c.raw.GetKind(), c.raw.GetNamespace(), c.raw.GetName())
		if loc.File == "" {
			loc = l
		}
		names = append(names, c.by.label)
		if l.File != "" {
			locs[l.String()] = true
		}
	}
	// Differing only in labels and annotations: every copy does the same.
	metaOnly := !slices.ContainsFunc(cs[1:], func(c copyOf) bool {
		return firstDiff(withoutLabels(cs[0].obj), withoutLabels(c.obj), "") != ""
	})
	diff := ""
	for _, c := range cs[1:] {
		if d := firstDiff(cs[0].obj, c.obj, ""); d != "" {
			field, vals, _ := strings.Cut(d, ": ")
			diff = field
			if cs[0].raw.GetKind() != "Secret" { // a Secret's values are never shown
				a, b, _ := strings.Cut(vals, " vs ")
				diff = fmt.Sprintf("%s is %s from %s, %s from %s", field, a, cs[0].by.label, b, c.by.label)
			}
			break
		}
	}
	gen := generatedCause(env, cs)
	self := selfApplying(env, cs)
	f := at(loc, verify.Finding{Detector: TwoAppliers, Item: id})
	if k := cs[len(cs)-1].by.k; k != nil {
		f.Subject = k.Ref()
	}
	both := strings.Join(names[:len(names)-1], ", ") + " and by " + names[len(names)-1]
	if len(locs) > 1 {
		both += " (" + strings.Join(slices.Sorted(maps.Keys(locs)), ", ") + ")"
	}
	prune := "the one whose owner labels (kustomize.toolkit.fluxcd.io/name) it carries deletes it when it prunes it, though the other still declares it"
	switch {
	case diff != "" && metaOnly:
		// Labels and annotations flip with every reconcile, as the owner
		// labels of any shared object do; no controller refuses it and
		// nothing the object does changes (a shared component's
		// commonLabels stamped per app).
		f.Verdict = verify.Warn
		f.Message = fmt.Sprintf("%s is applied by %s, differing only in its labels or annotations (%s): each reconcile overwrites the other's labels and owner labels, and %s (until the other's next reconcile recreates it)", id, both, diff, prune)
	case diff != "":
		f.Message = fmt.Sprintf("%s is applied by %s with different content after substitution (%s): both apply it server-side with kustomize-controller's field manager, so each reconcile overwrites the other's; and %s", id, both, diff, prune)
	default:
		f.Verdict = verify.Warn
		f.Message = fmt.Sprintf("%s is applied by %s, with the same content: each reconcile takes the other's owner labels, and %s (until the other's next reconcile recreates it)", id, both, prune)
	}
	labels := make([]string, len(cs))
	for i, c := range cs {
		labels[i] = c.by.label
	}
	switch {
	case self != nil:
		// The Kustomization's own path lists the file declaring it: it
		// applies itself. A kustomization.yaml in the parent would not
		// change that.
		kf := self.Path + "/kustomization.yaml"
		f.Cause = fmt.Sprintf("the path of Kustomization %s (%s) renders Kustomization %s itself", self.Ref(), self.Path, self.Ref())
		f.Message += ". Cause: " + f.Cause + fmt.Sprintf(", so it applies itself besides its parent (%s)", self.Location.File)
		f.Fix = fmt.Sprintf("keep %s out of its own path: move what it deploys to a subdirectory (e.g. %s/app) and point spec.path there, or drop %s from %s", self.Location.File, self.Path, path.Base(self.Location.File), kf)
	case gen != "":
		f.Message += ". Cause: " + gen
		f.Cause = gen
		f.Fix = fmt.Sprintf("add a kustomization.yaml to %s listing only what %s should apply, so its path stops including %s", cs[0].by.path, cs[0].by.label, strings.Join(paths(cs[1:]), ", "))
	default:
		f.Cause = strings.Join(labels, " and ") + " apply the same object(s)"
		f.Fix = fmt.Sprintf("leave %s in one Kustomization's path only (the other may dependsOn it)", id)
	}
	f.CauseFix = f.Fix
	return f
}

// withoutLabels is obj without metadata.labels and metadata.annotations:
// what is left is what the object does.
func withoutLabels(obj map[string]any) map[string]any {
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		return obj
	}
	md = maps.Clone(md)
	delete(md, "labels")
	delete(md, "annotations")
	out := maps.Clone(obj)
	out["metadata"] = md
	return out
}

// selfApplying is the Kustomization among the appliers of cs that is the
// object itself (its path renders its own declaration), nil when none.
func selfApplying(env *fluxrepo.Env, cs []copyOf) *fluxrepo.Kustomization {
	r := cs[0].raw
	if !fluxobj.IsKustomization(r.GetApiVersion(), r.GetKind()) {
		return nil
	}
	for _, c := range cs {
		if k := c.by.k; k != nil && k.Name == r.GetName() && (r.GetNamespace() == "" || r.GetNamespace() == k.Namespace) {
			return k
		}
	}
	return nil
}

func depth(p string) int {
	if p == "." {
		return 0
	}
	return strings.Count(p, "/") + 1
}

func paths(cs []copyOf) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.by.path)
	}
	return slices.Compact(out)
}

// generatedCause says which directory lacks a kustomization.yaml when that
// is why the copies' first applier applies the others' objects too: its
// path has no kustomization file, so kustomize-controller generates one
// (fluxcd/pkg/kustomize v1.35 Generator.findOrGenerateKustomization) listing
// every manifest below it: scanManifests descends into every subdirectory
// without a kustomization file and lists those with one whole, another
// Kustomization's path among them. "" when that is not the cause.
func generatedCause(env *fluxrepo.Env, cs []copyOf) string {
	outer := cs[0].by
	if outer.k != nil && outer.k.Via != "" || hasKustomizationFile(env.Repo, outer.path) {
		return ""
	}
	var inner []string
	for _, c := range cs[1:] {
		p := c.by.path
		if c.by.k == nil || c.by.k.Via != "" || !(outer.path == "." || strings.HasPrefix(p, outer.path+"/")) {
			return ""
		}
		inner = append(inner, fmt.Sprintf("%s (the path of %s)", p, c.by.label))
	}
	return fmt.Sprintf("%s has no kustomization.yaml, so the build kustomize-controller generates for %s applies every manifest below it, %s included", outer.path, outer.label, strings.Join(slices.Compact(inner), ", "))
}

// hasKustomizationFile says whether dir (relative to repo) holds one of
// the file names kustomize recognises.
func hasKustomizationFile(repo, dir string) bool {
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		if st, err := os.Stat(filepath.Join(repo, filepath.FromSlash(dir), n)); err == nil && !st.IsDir() {
			return true
		}
	}
	return false
}

// firstDiff is the first field (in key order) where a and b differ, with
// both values ("" when equal).
func firstDiff(a, b any, at string) string {
	if reflect.DeepEqual(a, b) {
		return ""
	}
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := slices.Collect(maps.Keys(am))
		for k := range bm {
			if _, ok := am[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := k
			if at != "" {
				p = at + "." + k
			}
			if d := firstDiff(am[k], bm[k], p); d != "" {
				return d
			}
		}
	}
	as, aok := a.([]any)
	bs, bok := b.([]any)
	if aok && bok && len(as) == len(bs) {
		for i := range as {
			if d := firstDiff(as[i], bs[i], fmt.Sprintf("%s[%d]", at, i)); d != "" {
				return d
			}
		}
	}
	return fmt.Sprintf("%s: %s vs %s", at, short(a), short(b))
}

func short(v any) string {
	var s string
	switch x := v.(type) {
	case nil:
		return "absent"
	case string:
		s = fmt.Sprintf("%q", x)
	default:
		s = fmt.Sprint(x)
	}
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}
