package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/mod/semver"
	"golang.org/x/sync/errgroup"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// BeforeOptions tune the before gates.
type BeforeOptions struct {
	Namespace string
	// MinKubernetes is the Flux version's minimum, e.g. v1.33.0; empty skips.
	MinKubernetes string
	FluxVersion   string
	// Force lets an apply take over a Flux managed by Flux itself.
	Force bool
	// YieldToOperator (up) leaves controllers the Flux Operator manages to
	// it: the ownership gate warns and Before reports the FluxInstance.
	YieldToOperator bool
}

// Before runs the gates that must hold before anything is applied. The
// returned bool says the Flux namespace does not exist (read by the
// namespace gate; false when it could not be read); the string names the
// FluxInstance the controllers are left to (YieldToOperator), "" otherwise.
func Before(ctx context.Context, cl *apply.Cluster, objs []*unstructured.Unstructured, o BeforeOptions) ([]verify.Check, bool, string) {
	reach, gitVersion := cl.Reachable(GateReachable)
	if reach.Verdict != verify.Pass {
		return []verify.Check{reach}, false, ""
	}
	out := []verify.Check{reach}

	ver := GateVersion.New()
	switch {
	case o.MinKubernetes == "":
		ver.Verdict = verify.Skip
		ver.Message = fmt.Sprintf("no minimum Kubernetes version recorded for Flux %s in versions.env (FLUX_MIN_KUBERNETES)", o.FluxVersion)
	case !semver.IsValid(gitVersion):
		ver.Verdict = verify.Skip
		ver.Message = fmt.Sprintf("server version %q is not semver; cannot compare with %s", gitVersion, o.MinKubernetes)
	case semver.Compare(semver.Canonical(gitVersion), o.MinKubernetes) < 0:
		ver.Verdict = verify.Fail
		ver.Message = fmt.Sprintf("Kubernetes %s is older than %s, the minimum for Flux %s; upgrade the cluster or pick an older --flux-version", gitVersion, o.MinKubernetes, o.FluxVersion)
	default:
		ver.Verdict = verify.Pass
		ver.Message = fmt.Sprintf("Kubernetes %s ≥ %s (Flux %s)", gitVersion, o.MinKubernetes, o.FluxVersion)
	}
	ns, absent := namespace(ctx, cl, o.Namespace)
	own, operator := ownership(ctx, cl, objs, o, absent)
	out = append(out, ver, permissions(ctx, cl, objs), ns, own)
	return out, absent, operator
}

// verbs this phase needs on every object it applies: server-side apply is
// a patch that may create, and the plan reads first.
var applyVerbs = []string{"get", "create", "patch"}

// permissions asks the API server, with SelfSubjectAccessReviews, whether
// this identity may do what the apply needs, and lists every gap.
func permissions(ctx context.Context, cl *apply.Cluster, objs []*unstructured.Unstructured) verify.Check {
	c := GatePermissions.New()
	type attr struct{ group, resource, ns, verb string }
	var attrs []attr
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := cl.Client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			c.Verdict = verify.Fail
			c.Message = fmt.Sprintf("the API server does not serve %s (for %s): %v", gvk, apply.ID(o), err)
			return c
		}
		for _, v := range applyVerbs {
			a := attr{m.Resource.Group, m.Resource.Resource, o.GetNamespace(), v}
			if !slices.Contains(attrs, a) {
				attrs = append(attrs, a)
			}
		}
	}
	// An identity allowed every verb on every resource (cluster-admin, as
	// a bootstrap usually is) needs one review, not one per attribute.
	all := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "*", Group: "*", Resource: "*"},
	}}
	if res, err := cl.Clientset.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, all, metav1.CreateOptions{}); err == nil && res.Status.Allowed {
		c.Verdict, c.Message = verify.Pass, "every permission the apply needs is granted"
		c.Evidence = []string{fmt.Sprintf("one SelfSubjectAccessReview: verb * on resource * of group *, cluster-wide, allowed (covers verbs %s on the %d object(s))", strings.Join(applyVerbs, ","), len(objs))}
		return c
	}
	// One review per attribute, a bounded number in flight.
	allowed := make([]bool, len(attrs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, a := range attrs {
		g.Go(func() error {
			r := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: a.ns, Verb: a.verb, Group: a.group, Resource: a.resource},
			}}
			res, err := cl.Clientset.AuthorizationV1().SelfSubjectAccessReviews().Create(gctx, r, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			allowed[i] = res.Status.Allowed
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		c.Verdict = verify.Skip
		c.Message = fmt.Sprintf("could not ask the API server about permissions: %v", err)
		return c
	}
	var missing []string
	for i, a := range attrs {
		if !allowed[i] {
			res := a.resource
			if a.group != "" {
				res += "." + a.group
			}
			where := "cluster-wide"
			if a.ns != "" {
				where = "in namespace " + a.ns
			}
			missing = append(missing, fmt.Sprintf("%s %s %s", a.verb, res, where))
		}
	}
	c.Evidence = []string{fmt.Sprintf("%d SelfSubjectAccessReviews for verbs %s on %d object(s)", len(attrs), strings.Join(applyVerbs, ","), len(objs))}
	if len(missing) > 0 {
		c.Verdict = verify.Fail
		c.Message = fmt.Sprintf("this identity lacks %d permission(s) the apply needs; grant them (e.g. bind cluster-admin for the bootstrap) and re-run", len(missing))
		c.Evidence = append(c.Evidence, missing...)
		return c
	}
	c.Verdict, c.Message = verify.Pass, "every permission the apply needs is granted"
	return c
}

// namespace is the namespace gate; the bool says the namespace does not exist.
func namespace(ctx context.Context, cl *apply.Cluster, name string) (verify.Check, bool) {
	c := GateNamespace.New()
	var ns corev1.Namespace
	err := cl.Client.Get(ctx, client.ObjectKey{Name: name}, &ns)
	switch {
	case apierrors.IsNotFound(err):
		c.Verdict, c.Message = verify.Pass, fmt.Sprintf("namespace %s does not exist yet; it will be created", name)
		return c, true
	case err != nil:
		c.Verdict, c.Message = verify.Skip, fmt.Sprintf("could not read namespace %s: %v", name, err)
	case ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating:
		c.Verdict = verify.Fail
		c.Message = fmt.Sprintf("namespace %s is Terminating (since %s); wait for the deletion to finish or remove its finalizers, then re-run", name, ns.DeletionTimestamp)
	default:
		c.Verdict, c.Message = verify.Pass, fmt.Sprintf("namespace %s is Active", name)
	}
	return c, false
}

// Labels that say a Flux install is managed by Flux itself or by the Flux
// operator; a change made here would be reverted by them.
var managerLabels = []struct{ key, who string }{
	{"kustomize.toolkit.fluxcd.io/name", "Flux Kustomization"},
	{operatorLabel, "Flux operator (FluxInstance)"},
}

// operatorLabel and operatorNamespaceLabel are the Flux Operator's mark on
// what a FluxInstance applies.
const (
	operatorLabel          = "fluxcd.controlplane.io/name"
	operatorNamespaceLabel = "fluxcd.controlplane.io/namespace"
)

// operatorOf is the FluxInstance (namespace/name, or name alone) whose
// labels the Flux Operator put on an object; false when none.
func operatorOf(labels map[string]string) (string, bool) {
	name := labels[operatorLabel]
	if name == "" {
		return "", false
	}
	if ns := labels[operatorNamespaceLabel]; ns != "" {
		return ns + "/" + name, true
	}
	return name, true
}

// ManagerLabels are the label keys (name and namespace) by which a Flux
// Kustomization or the Flux operator marks what it applies; the ownership
// gate refuses an apply over Deployments that carry the name label.
func ManagerLabels() []string {
	keys := make([]string, 0, 2*len(managerLabels))
	for _, ml := range managerLabels {
		keys = append(keys, ml.key, strings.TrimSuffix(ml.key, "/name")+"/namespace")
	}
	return keys
}

// ownership is the ownership gate: the live Deployments, read with one
// list (none when the namespace is absent), must carry no manager label.
func ownership(ctx context.Context, cl *apply.Cluster, objs []*unstructured.Unstructured, o BeforeOptions, nsAbsent bool) (verify.Check, string) {
	c := GateOwnership.New()
	var deployments []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			deployments = append(deployments, o)
		}
	}
	lv := apply.ReadLive(ctx, cl.Client, deployments, func(string) bool { return nsAbsent })
	var owned []string
	instance, byOperatorOnly := "", true
	for _, d := range deployments {
		live, err := lv.Get(ctx, d)
		if err != nil || live == nil {
			continue
		}
		labels := live.GetLabels()
		for _, ml := range managerLabels {
			if name, ok := labels[ml.key]; ok {
				ns := labels[strings.TrimSuffix(ml.key, "/name")+"/namespace"]
				owned = append(owned, fmt.Sprintf("%s is managed by %s %s/%s (label %s)", apply.ID(d), ml.who, ns, name, ml.key))
				if ml.key == operatorLabel {
					instance, _ = operatorOf(labels)
				} else {
					byOperatorOnly = false
				}
			}
		}
	}
	switch {
	case len(owned) == 0:
		c.Verdict, c.Message = verify.Pass, "no Flux Kustomization or Flux operator manages these controllers"
	case o.YieldToOperator && byOperatorOnly && !o.Force:
		c.Verdict = verify.Warn
		c.Message = fmt.Sprintf("the Flux Operator manages these controllers (FluxInstance %s): up leaves them to it and applies nothing of phase controllers; change them through the FluxInstance's spec", instance)
		c.Evidence = owned
		return c, instance
	case o.Force:
		c.Verdict = verify.Warn
		c.Message = "--force: applying over a Flux that is managed by Flux itself or the Flux operator; it may revert this change"
		c.Evidence = owned
	default:
		c.Verdict = verify.Fail
		c.Message = "these controllers are managed by Flux itself or the Flux operator, which would revert this apply; change them through that owner, or pass --force"
		c.Evidence = owned
	}
	return c, ""
}
