package controllers

import (
	"context"
	"fmt"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/pkg/patches"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

const revisionAnnotation = "deployment.kubernetes.io/revision"

// After proves the apply landed: the live Deployments carry the effective
// flags computed at render, and every rollout finished with no pod of an
// older template left.
func After(ctx context.Context, cl *apply.Cluster, rendered []appsv1.Deployment) []verify.Check {
	flags, roll := GateFlagsLive.New(), GateRollout.New()
	var flagGaps, rollGaps []string
	views := map[string]*namespaceView{}
	for _, want := range rendered {
		name := "Deployment/" + want.Namespace + "/" + want.Name
		v, ok := views[want.Namespace]
		if !ok {
			v = readNamespace(ctx, cl, want.Namespace)
			views[want.Namespace] = v
		}
		live, err := v.deployment(ctx, cl, &want)
		if err != nil {
			flagGaps = append(flagGaps, fmt.Sprintf("%s: %v", name, err))
			rollGaps = append(rollGaps, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		for _, wc := range want.Spec.Template.Spec.Containers {
			gaps, ev := compareFlags(name, wc, live.Spec.Template.Spec.Containers)
			flagGaps = append(flagGaps, gaps...)
			flags.Evidence = append(flags.Evidence, ev...)
		}
		gap, ev := v.rolledOut(live)
		if gap != "" {
			rollGaps = append(rollGaps, gap)
		}
		roll.Evidence = append(roll.Evidence, ev)
	}
	if len(flagGaps) > 0 {
		flags.Verdict = verify.Fail
		flags.Message = fmt.Sprintf("%d live container(s) differ from the render: something else changed them or the apply did not land; re-run, and look for another manager of these Deployments", len(flagGaps))
		flags.Evidence = append(flagGaps, flags.Evidence...)
	} else {
		flags.Verdict = verify.Pass
		flags.Message = fmt.Sprintf("the effective flags of %d Deployment(s) on the cluster equal the render", len(rendered))
	}
	if len(rollGaps) > 0 {
		roll.Verdict = verify.Fail
		roll.Message = fmt.Sprintf("%d rollout(s) not finished: pods of an older template still run or the new ReplicaSet is not available", len(rollGaps))
		roll.Evidence = append(rollGaps, roll.Evidence...)
	} else {
		roll.Verdict = verify.Pass
		roll.Message = fmt.Sprintf("%d Deployment(s) run only pods of their current template, all available", len(rendered))
	}
	return []verify.Check{flags, roll}
}

func compareFlags(name string, want corev1.Container, live []corev1.Container) (gaps, evidence []string) {
	i := slices.IndexFunc(live, func(c corev1.Container) bool { return c.Name == want.Name })
	if i < 0 {
		return []string{fmt.Sprintf("%s: container %s missing", name, want.Name)}, nil
	}
	wf, err := patches.ParseArgs(want.Args)
	if err != nil {
		return []string{fmt.Sprintf("%s container %s (render): %v", name, want.Name, err)}, nil
	}
	lf, err := patches.ParseArgs(live[i].Args)
	if err != nil {
		return []string{fmt.Sprintf("%s container %s (live): %v", name, want.Name, err)}, nil
	}
	if !maps.Equal(wf.Values, lf.Values) || !maps.Equal(wf.FeatureGates, lf.FeatureGates) {
		gaps = append(gaps, fmt.Sprintf("%s container %s: live args %q, rendered %q", name, want.Name, live[i].Args, want.Args))
	}
	if live[i].Image != want.Image {
		gaps = append(gaps, fmt.Sprintf("%s container %s: live image %s, rendered %s", name, want.Name, live[i].Image, want.Image))
	}
	if len(lf.GateArgs) > 0 {
		evidence = append(evidence, fmt.Sprintf("%s container %s: %v", name, want.Name, lf.GateArgs))
	}
	return gaps, evidence
}

// namespaceView is one read of a namespace's Deployments, ReplicaSets and
// pods, shared by every rendered Deployment in it (three lists, not three
// reads per Deployment). A list that failed is retried per Deployment, so
// its error lands on the Deployment it concerns.
type namespaceView struct {
	ns          string
	deployments map[string]*appsv1.Deployment
	rss         *appsv1.ReplicaSetList
	pods        *corev1.PodList
	rsErr       error
	podErr      error
}

func readNamespace(ctx context.Context, cl *apply.Cluster, ns string) *namespaceView {
	v := &namespaceView{ns: ns, deployments: map[string]*appsv1.Deployment{}, rss: &appsv1.ReplicaSetList{}, pods: &corev1.PodList{}}
	var ds appsv1.DeploymentList
	if cl.Client.List(ctx, &ds, client.InNamespace(ns)) == nil {
		for i := range ds.Items {
			v.deployments[ds.Items[i].Name] = &ds.Items[i]
		}
	}
	v.rsErr = cl.Client.List(ctx, v.rss, client.InNamespace(ns))
	v.podErr = cl.Client.List(ctx, v.pods, client.InNamespace(ns))
	return v
}

// deployment is the live Deployment of want, read on its own when the list
// did not have it.
func (v *namespaceView) deployment(ctx context.Context, cl *apply.Cluster, want *appsv1.Deployment) (*appsv1.Deployment, error) {
	if d, ok := v.deployments[want.Name]; ok {
		return d, nil
	}
	var live appsv1.Deployment
	if err := cl.Client.Get(ctx, client.ObjectKeyFromObject(want), &live); err != nil {
		return nil, err
	}
	return &live, nil
}

// rolledOut checks that the Deployment's current ReplicaSet is fully
// available and no pod of another template remains.
func (v *namespaceView) rolledOut(d *appsv1.Deployment) (gap, evidence string) {
	name := "Deployment/" + d.Namespace + "/" + d.Name
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	if d.Status.ObservedGeneration < d.Generation {
		return fmt.Sprintf("%s: generation %d not yet observed (at %d)", name, d.Generation, d.Status.ObservedGeneration), ""
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return fmt.Sprintf("%s: selector: %v", name, err), ""
	}
	if v.rsErr != nil {
		return fmt.Sprintf("%s: list ReplicaSets: %v", name, v.rsErr), ""
	}
	var current *appsv1.ReplicaSet
	for i := range v.rss.Items {
		rs := &v.rss.Items[i]
		if sel.Matches(labels.Set(rs.Labels)) && metav1.IsControlledBy(rs, d) && rs.Annotations[revisionAnnotation] == d.Annotations[revisionAnnotation] {
			current = rs
		}
	}
	if current == nil {
		return fmt.Sprintf("%s: no ReplicaSet for revision %s", name, d.Annotations[revisionAnnotation]), ""
	}
	hash := current.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	if current.Status.AvailableReplicas < want {
		return fmt.Sprintf("%s: ReplicaSet %s has %d/%d available", name, current.Name, current.Status.AvailableReplicas, want), ""
	}
	if v.podErr != nil {
		return fmt.Sprintf("%s: list pods: %v", name, v.podErr), ""
	}
	var old []string
	n := 0
	for _, p := range v.pods.Items {
		if !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		n++
		if p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != hash {
			old = append(old, p.Name)
		}
	}
	if len(old) > 0 {
		return fmt.Sprintf("%s: pods of an older template remain: %v", name, old), ""
	}
	return "", fmt.Sprintf("%s: revision %s, ReplicaSet %s %d/%d available, %d pod(s) all of the current template", name, d.Annotations[revisionAnnotation], current.Name, current.Status.AvailableReplicas, want, n)
}
