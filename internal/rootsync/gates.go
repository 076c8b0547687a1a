package rootsync

import (
	"context"
	"fmt"
	"slices"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/fluxgraph"
	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/pkg/patches"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// Gates of the sync phase.
var (
	GateRoot          = verify.Def{ID: "sync.root", Phase: PhaseName, Stage: verify.Before, Title: "the root Kustomization is in the render"}
	GateRootWait      = verify.Def{ID: "sync.root-wait", Phase: PhaseName, Stage: verify.Before, Title: "the root Kustomization does not wait for what waits for it"}
	GateSource        = verify.Def{ID: "sync.source", Phase: PhaseName, Stage: verify.Before, Title: "the root's source (GitRepository or OCIRepository) is in the render"}
	GateDependsOn     = verify.Def{ID: "sync.depends-on", Phase: PhaseName, Stage: verify.Before, Title: "every dependsOn target is in the render"}
	GateDecryption    = verify.Def{ID: "sync.decryption-secret", Phase: PhaseName, Stage: verify.Before, Title: "every decryption.secretRef exists in the cluster", Prefix: true}
	GatePrerequisite  = verify.Def{ID: "sync.prerequisite", Phase: PhaseName, Stage: verify.Before, Title: "every substituteFrom object made outside the repository exists with the keys used", Prefix: true}
	GateExternal      = verify.Def{ID: "sync.external-artifact", Phase: PhaseName, Stage: verify.Before, Title: "kustomize-controller reads ExternalArtifact sources"}
	GateOperator      = verify.Def{ID: "sync.flux-operator", Phase: PhaseName, Stage: verify.Before, Title: "who makes the declared root: sync, or the Flux Operator"}
	GateTemporary     = verify.Def{ID: "sync.temporary-source", Phase: PhaseName, Stage: verify.Before, Title: "source of the GitRepository"}
	GateApplied       = verify.Def{ID: "sync.applied", Phase: PhaseName, Stage: verify.After, Title: "the root was applied"}
	GateSourceReady   = verify.Def{ID: "sync.source-ready", Phase: PhaseName, Stage: verify.After, Title: "the root's source is Ready with an artifact"}
	GateRootApplied   = verify.Def{ID: "sync.root-applied", Phase: PhaseName, Stage: verify.After, Title: "the root Kustomization is Ready at the artifact's revision"}
	GateTemporaryKept = verify.Def{ID: "sync.temporary-source-kept", Phase: PhaseName, Stage: verify.After, Title: "the temporary source survived the root's reconcile"}
)

// Static is the before-gates that need only the render: the root is there
// with wait: false, every dependsOn target exists, the root's GitRepository
// is in the render.
func Static(r *Render) []verify.Check {
	o := r.Options
	rootID := o.Namespace + "/" + o.RootName
	root := GateRoot.New()
	wait := GateRootWait.New()
	src := GateSource.New()
	var out []verify.Check
	if r.Root == nil {
		var names []string
		for _, k := range r.Kustomizations {
			names = append(names, k.Namespace+"/"+k.Name)
		}
		root.Verdict = verify.Fail
		root.Message = fmt.Sprintf("%s renders no Kustomization %s: the environment needs its own sync.yaml declaring the root (path: ./%s) and listed in %s/kustomization.yaml",
			o.Path, rootID, strings.TrimPrefix(o.Path, "./"), o.Path)
		root.Evidence = []string{fmt.Sprintf("Kustomizations in the render: %s", orNone(names))}
		wait.Verdict, wait.Message = verify.Skip, "no root Kustomization to check"
		src.Verdict, src.Message = verify.Skip, "no root Kustomization, so no source reference to check"
		out = append(out, root, wait, src)
	} else if r.Env != nil && r.Env.Origin.Layout == fluxrepo.LayoutBootstrap {
		og := r.Env.Origin
		// flux bootstrap's placeholder: the root and its GitRepository are
		// written at bootstrap with the URL of the repository, which git
		// does not hold here; nothing to apply them from.
		root.Verdict = verify.Fail
		root.Message = fmt.Sprintf("%s is flux bootstrap's placeholder: the root %s and its GitRepository are written by flux bootstrap with the repository's URL, which %s does not hold; declare the real source: --source-kind GitRepository --source-url URL [--source-ref refs/heads/main] (sync then creates GitRepository %s and Kustomization %s applying ./%s), or run flux bootstrap",
			og.Location.File, rootID, o.Path, rootID, rootID, strings.TrimPrefix(o.Path, "./"))
		wait.Verdict, wait.Message = verify.Skip, "no root to apply: flux bootstrap's placeholder"
		src.Verdict, src.Message = verify.Skip, "no source to apply: flux bootstrap's placeholder"
		out = append(out, root, wait, src)
	} else {
		root.Verdict = verify.Pass
		root.Message = fmt.Sprintf("Kustomization %s, path %s", rootID, r.Root.Spec.Path)
		root.Evidence = []string{"declared in " + r.where(kustomizev1.KustomizationKind, o.Namespace, o.RootName)}
		var direct, through []string
		if r.Env != nil {
			direct, through = fluxgraph.RootWaiters(r.Env, fluxgraph.FromEnv(r.Env))
		}
		switch {
		case len(direct)+len(through) > 0 || (r.Env == nil && r.Root.Spec.Wait):
			// The rule is check's [root-wait] (fluxgraph.RootWaiters);
			// without the repository model, wait: true is refused as before.
			wait.Verdict = verify.Fail
			wait.Message = fmt.Sprintf("the root Kustomization %s (in %s) health-checks Kustomization %s, which wait(s) for it through dependsOn: a deadlock; set wait: false (or drop its spec.healthChecks entries)",
				rootID, r.where(kustomizev1.KustomizationKind, o.Namespace, o.RootName), orNone(append(direct, through...)))
		case r.Root.Spec.Wait:
			wait.Verdict = verify.Pass
			wait.Message = "wait: true, and nothing the root health-checks depends on it (kustomize-controller leaves the root out of its own health check)"
		default:
			wait.Verdict = verify.Pass
			wait.Message = "wait: false: the root is Ready on apply and never health-gates its children"
		}
		ref := r.Root.Spec.SourceRef
		if r.Source == nil {
			src.Verdict = verify.Fail
			src.Message = fmt.Sprintf("the root %s reads %s %s, which %s does not render: declare it (clusters/base/flux-system) and list it in the kustomization", rootID, ref.Kind, ref.Name, o.Path)
		} else if ref.Kind != sourcev1.GitRepositoryKind && ref.Kind != sourcev1.OCIRepositoryKind {
			// A Bucket's revision is a digest of its listing, not a ref a
			// registry or git answers for: nothing here proves it.
			src.Verdict = verify.Fail
			src.Message = fmt.Sprintf("the root %s reads a %s; sync applies a root whose source is a GitRepository or an OCIRepository: move the root to one (flux push artifact to a registry, and an OCIRepository), or create the %s with the Flux Operator or flux", rootID, ref.Kind, ref.Kind)
		} else {
			url, _, _ := unstructuredString(r.Source.Object, "spec", "url")
			src.Verdict = verify.Pass
			src.Message = fmt.Sprintf("%s %s/%s, url %s", ref.Kind, r.Source.GetNamespace(), r.Source.GetName(), url)
			src.Evidence = []string{"declared in " + r.where(ref.Kind, fluxobj.KustomizationSource(r.Root).Namespace, ref.Name)}
		}
		out = append(out, root, wait, src)
	}
	return append(out, dependsOnGate(r))
}

// dependsOnGate is sync.depends-on: every dependsOn of a Kustomization the
// root directory renders (what sync applies) names a Kustomization of the
// environment (none of fluxgraph's dangling edges starts there). A target
// that a Kustomization's path renders, not the root directory, is not
// missing: it exists once that Kustomization applied, and
// kustomize-controller waits for it until then.
func dependsOnGate(r *Render) verify.Check {
	o := r.Options
	g := fluxgraph.FromEnv(r.Env)
	dep := GateDependsOn.New()
	var missing []string
	edges, onRoot := 0, false
	for _, k := range r.Kustomizations {
		id := fluxgraph.ID(k, r.Env.Options.Namespace)
		edges += len(k.Spec.DependsOn)
		for _, p := range g.Problems() {
			if e := p.Edge; p.Kind == fluxgraph.DanglingEdge && e.From == id {
				missing = append(missing, fmt.Sprintf("Kustomization %s (in %s) depends on %s, which %s does not render: it would wait forever",
					id, r.where(fluxobj.KustomizationKind, id.Namespace, id.Name), e.To, o.Path))
				onRoot = onRoot || e.To.Name == o.RootName
			}
		}
	}
	if len(missing) > 0 {
		dep.Verdict = verify.Fail
		dep.Message = missing[0]
		if len(missing) > 1 {
			dep.Message += fmt.Sprintf(" (and %d more)", len(missing)-1)
		}
		if onRoot && r.Root == nil {
			dep.Message += "; add the environment's sync.yaml (the root Kustomization) to " + o.Path + "/kustomization.yaml"
		} else {
			dep.Message += "; add the missing Kustomization or drop the edge"
		}
		dep.Evidence = missing
	} else {
		dep.Verdict = verify.Pass
		dep.Message = fmt.Sprintf("%d dependsOn edge(s) among %d Kustomization(s), all targets rendered", edges, len(r.Kustomizations))
	}
	return dep
}

// DecryptionSecrets checks that every decryption.secretRef of the render
// exists in the cluster (step 2 installs it).
func DecryptionSecrets(ctx context.Context, cl client.Client, r *Render) []verify.Check {
	type ref struct{ ns, name string }
	users := map[ref][]string{}
	var order []ref
	for _, k := range r.Kustomizations {
		if k.Spec.Decryption == nil || k.Spec.Decryption.SecretRef == nil {
			continue
		}
		rf := ref{k.Namespace, k.Spec.Decryption.SecretRef.Name}
		if _, ok := users[rf]; !ok {
			order = append(order, rf)
		}
		users[rf] = append(users[rf], k.Name)
	}
	var fallback []string
	for _, k := range r.Kustomizations {
		if d := k.Spec.Decryption; d != nil && d.SecretRef == nil && d.Provider == "sops" {
			fallback = append(fallback, k.Namespace+"/"+k.Name)
		}
	}
	if len(order) == 0 && len(fallback) == 0 {
		c := GateDecryption.New()
		c.Verdict, c.Message = verify.Pass, "no Kustomization of the render decrypts"
		return []verify.Check{c}
	}
	var out []verify.Check
	if len(fallback) > 0 {
		out = append(out, sopsAgeFallback(ctx, cl, r, fallback))
	}
	for _, rf := range order {
		c := GateDecryption.Each(rf.ns + "/" + rf.name).New()
		c.Title = "decryption Secret exists"
		var s corev1.Secret
		err := cl.Get(ctx, client.ObjectKey{Namespace: rf.ns, Name: rf.name}, &s)
		sp := r.Inputs.Supply(fluxrepo.DataKey("Secret", rf.ns, rf.name))
		switch {
		case apierrors.IsNotFound(err) && sp != nil:
			c.Verdict = verify.Pass
			c.Message = fmt.Sprintf("Secret %s/%s is supplied by %s, applied before the root (used by %s)", rf.ns, rf.name, sp.From, strings.Join(users[rf], ", "))
		case err == nil:
			c.Verdict = verify.Pass
			c.Message = fmt.Sprintf("Secret %s/%s exists (used by %s)", rf.ns, rf.name, strings.Join(users[rf], ", "))
		case apierrors.IsNotFound(err):
			c.Verdict = verify.Fail
			c.Message = fmt.Sprintf("Secret %s/%s not found; Kustomization(s) %s decrypt with it and would fail: install it first with `bootstrap age-key --path %s` (step 2)",
				rf.ns, rf.name, strings.Join(users[rf], ", "), r.Options.Path)
		default:
			c.Verdict = verify.Skip
			c.Message = fmt.Sprintf("could not read Secret %s/%s: %v", rf.ns, rf.name, err)
		}
		out = append(out, c)
	}
	return out
}

// Prerequisites checks that every prerequisite of the environment (a
// substituteFrom ConfigMap/Secret, not optional, that the environment does
// not render: fluxrepo.Env.Prerequisites) exists in the cluster with the
// keys its readers use that nothing rendered defines. Missing, the
// controller fails its readers with "substitute from '<Kind>/<name>' error:
// not found"; without a key, strict substitution fails them. Only key
// names are read and reported, never values.
func Prerequisites(ctx context.Context, cl client.Client, r *Render) []verify.Check {
	if r.Env == nil {
		return nil
	}
	ps := r.Env.Prerequisites()
	if len(ps) == 0 {
		c := GatePrerequisite.New()
		c.Verdict, c.Message = verify.Pass, "every substituteFrom object is rendered by the environment (or optional)"
		return []verify.Check{c}
	}
	var out []verify.Check
	for _, p := range ps {
		c := GatePrerequisite.Each(p.Key()).New()
		readers := strings.Join(p.Readers, ", ")
		key := client.ObjectKey{Namespace: p.Namespace, Name: p.Name}
		if c, ok := r.Inputs.present(p); ok {
			out = append(out, c)
			continue
		}
		var err error
		var has func(string) bool
		if p.Kind == "ConfigMap" {
			var cm corev1.ConfigMap
			err = cl.Get(ctx, key, &cm)
			has = func(k string) bool { _, ok := cm.Data[k]; return ok }
		} else {
			var sec corev1.Secret
			err = cl.Get(ctx, key, &sec)
			has = func(k string) bool { _, ok := sec.Data[k]; return ok }
		}
		missing := slices.DeleteFunc(slices.Clone(p.Keys), has)
		switch {
		case apierrors.IsNotFound(err):
			c.Verdict = verify.Fail
			c.Message = fmt.Sprintf("%s not found: it is made outside the repository and Kustomization(s) %s substitute from it; kustomize-controller would fail them with \"substitute from '%s/%s' error: not found\": create it (keys %s) before the sync",
				p.Key(), readers, p.Kind, p.Name, orNone(p.Keys))
		case err != nil:
			c.Verdict = verify.Skip
			c.Message = fmt.Sprintf("could not read %s: %v", p.Key(), err)
		case len(missing) > 0:
			c.Verdict = verify.Fail
			c.Message = fmt.Sprintf("%s exists but lacks key(s) %s that Kustomization(s) %s use and nothing the environment renders defines: strict substitution fails them (variable not set); add the key(s) to it",
				p.Key(), strings.Join(missing, ", "), readers)
		default:
			c.Verdict = verify.Pass
			c.Message = fmt.Sprintf("%s exists with the key(s) its readers use (%s; read by %s)", p.Key(), orNone(p.Keys), readers)
		}
		out = append(out, c)
	}
	return out
}

// sopsAgeFallback checks the Secret that Kustomizations decrypting with
// provider sops and no secretRef read: kustomize-controller's
// --sops-age-secret (a Secret in its own namespace), read from the live
// Deployment's args. kustomize-controller v1.9.5 internal/decryptor
// ImportKeys: without a secretRef the fallback Secret is used when the flag
// is set; a Kustomization without a decryption stanza is not decrypted at
// all, flag or not.
func sopsAgeFallback(ctx context.Context, cl client.Client, r *Render, users []string) verify.Check {
	ns := r.Options.Namespace
	c := GateDecryption.Each("sops-age-secret").New()
	c.Title = "the --sops-age-secret fallback exists"
	var dep appsv1.Deployment
	if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kustomize-controller"}, &dep); err != nil {
		c.Verdict = verify.Skip
		c.Message = fmt.Sprintf("Kustomization(s) %s decrypt with provider sops and no secretRef, so they need kustomize-controller's --sops-age-secret, and its Deployment %s/kustomize-controller could not be read: %v", strings.Join(users, ", "), ns, err)
		return c
	}
	name, err := fluxobj.SOPSAgeSecret(&dep)
	if err != nil {
		c.Verdict = verify.Skip
		c.Message = fmt.Sprintf("Kustomization(s) %s decrypt with provider sops and no secretRef, and kustomize-controller's args could not be read: %v", strings.Join(users, ", "), err)
		return c
	}
	if name == "" {
		c.Verdict = verify.Fail
		c.Message = fmt.Sprintf("Kustomization(s) %s decrypt with provider sops and no secretRef, and kustomize-controller runs without --sops-age-secret: their SOPS files would fail to decrypt; set spec.decryption.secretRef.name (e.g. sops-age), or add --sops-age-secret=sops-age to kustomize-controller", strings.Join(users, ", "))
		return c
	}
	var s corev1.Secret
	switch err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &s); {
	case err == nil:
		c.Verdict = verify.Pass
		c.Message = fmt.Sprintf("Secret %s/%s (kustomize-controller's --sops-age-secret) exists; Kustomization(s) %s decrypt with it", ns, name, strings.Join(users, ", "))
	case apierrors.IsNotFound(err):
		c.Verdict = verify.Fail
		c.Message = fmt.Sprintf("Secret %s/%s not found: kustomize-controller's --sops-age-secret names it and Kustomization(s) %s decrypt with it (provider sops, no secretRef): install it first with `bootstrap age-key --path %s --secret-name %s`", ns, name, strings.Join(users, ", "), r.Options.Path, name)
	default:
		c.Verdict = verify.Skip
		c.Message = fmt.Sprintf("could not read Secret %s/%s: %v", ns, name, err)
	}
	return c
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// fluxInstanceList is the Flux Operator's FluxInstance list kind.
var fluxInstanceList = schema.GroupVersionKind{Group: "fluxcd.controlplane.io", Version: "v1", Kind: "FluxInstanceList"}

// operatorGate is sync.flux-operator, for a root a FluxInstance declares.
// Where no FluxInstance is in the root's namespace, sync creates the root
// and its source as the operator would. Where one is, the operator makes
// them: sync applies nothing and proves what it made (it returns the
// instance), and a temporary source (which the operator would undo) fails.
func operatorGate(ctx context.Context, cl client.Client, r *Render, temporary bool) (verify.Check, string) {
	c := GateOperator.New()
	ns := r.Root.Namespace
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(fluxInstanceList)
	switch err := cl.List(ctx, l, client.InNamespace(ns)); {
	case meta.IsNoMatchError(err) || (err == nil && len(l.Items) == 0):
		c.Verdict = verify.Pass
		c.Message = fmt.Sprintf("no FluxInstance in %s: sync creates the root and its source as the Flux Operator would from %s", ns, r.Declared.Location)
		return c, ""
	case err != nil:
		c.Verdict = verify.Skip
		c.Message = fmt.Sprintf("could not list FluxInstances in %s: %v", ns, err)
		return c, ""
	}
	instance := ns + "/" + l.Items[0].GetName()
	if temporary {
		c.Verdict = verify.Fail
		c.Message = fmt.Sprintf("the Flux Operator manages this cluster (FluxInstance %s): it makes the root's source from spec.sync and would undo a temporary source; drop --serve/--source-url, or change spec.sync", instance)
		return c, ""
	}
	c.Verdict = verify.Pass
	c.Message = fmt.Sprintf("the Flux Operator manages this cluster (FluxInstance %s): it makes the root %s/%s and its source from spec.sync; sync applies nothing and proves them at the source's revision", instance, ns, r.Root.Name)
	return c, instance
}

// ExternalArtifactGate is sync.external-artifact: a Kustomization whose
// source is an ExternalArtifact (an ArtifactGenerator's output) is refused
// by kustomize-controller unless its ExternalArtifact feature gate is on
// (v1.9.5 kustomization_controller.go getSource: "can't access …,
// ExternalArtifact feature gate is disabled"), and the gate is opt-in. Read
// from the live Deployment's args and its version's default.
func ExternalArtifactGate(ctx context.Context, cl client.Client, r *Render) verify.Check {
	c := GateExternal.New()
	var readers []string
	for _, k := range r.Env.Kustomizations {
		if fluxobj.KustomizationSource(k.Kustomization).Kind == sourcev1.ExternalArtifactKind {
			readers = append(readers, k.Ref())
		}
	}
	if len(readers) == 0 {
		c.Verdict, c.Message = verify.Pass, "no Kustomization reads an ExternalArtifact"
		return c
	}
	ns := r.Options.Namespace
	var dep appsv1.Deployment
	if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kustomize-controller"}, &dep); err != nil {
		c.Verdict = verify.Skip
		c.Message = fmt.Sprintf("Kustomization(s) %s read an ExternalArtifact, and Deployment %s/kustomize-controller could not be read to see its %s gate: %v", strings.Join(readers, ", "), ns, patches.ExternalArtifact, err)
		return c
	}
	flags, err := patches.ManagerFlags(&dep)
	if err != nil {
		c.Verdict, c.Message = verify.Skip, fmt.Sprintf("Deployment %s/kustomize-controller: %v", ns, err)
		return c
	}
	image := patches.ManagerImage(&dep)
	version := patches.ImageVersion(image)
	g := patches.EffectiveGate("kustomize-controller", version, flags, patches.ExternalArtifact)
	c.Evidence = []string{"--feature-gates args, in order: " + orNone(flags.GateArgs), "image " + image}
	switch {
	case g.Unsupported:
		// Set, the controller would not start (features.SupportedFeatures).
		c.Verdict = verify.Fail
		c.Message = fmt.Sprintf("Kustomization(s) %s read an ExternalArtifact, and kustomize-controller %s has no %s feature gate (it refuses such a source, and exits at start-up if the gate is set): upgrade kustomize-controller to v1.7.0 or later (Flux v2.7) and set --feature-gates=%s=true",
			strings.Join(readers, ", "), version, patches.ExternalArtifact, patches.ExternalArtifact)
	case g.Value:
		c.Verdict = verify.Pass
		c.Message = fmt.Sprintf("kustomize-controller %s runs with %s=true; Kustomization(s) %s read an ExternalArtifact", version, patches.ExternalArtifact, strings.Join(readers, ", "))
	case !g.Explicit && !g.DefaultKnown:
		c.Verdict = verify.Skip
		c.Message = fmt.Sprintf("Kustomization(s) %s read an ExternalArtifact; kustomize-controller's version (image %q) is unknown, so its %s default is too", strings.Join(readers, ", "), image, patches.ExternalArtifact)
	default:
		c.Verdict = verify.Fail
		c.Message = fmt.Sprintf("Kustomization(s) %s read an ExternalArtifact, and kustomize-controller %s runs with %s=false (%s): it refuses them (\"can't access ExternalArtifact/…, %s feature gate is disabled\"); add --feature-gates=%s=true to kustomize-controller (and run source-watcher, which makes the artifacts)",
			strings.Join(readers, ", "), version, patches.ExternalArtifact, map[bool]string{true: "set so", false: "its default"}[g.Explicit], patches.ExternalArtifact, patches.ExternalArtifact)
	}
	return c
}
