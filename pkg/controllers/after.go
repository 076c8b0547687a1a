package controllers

import (
	"context"
	"fmt"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/pkg/apply"
	"github.com/homelab-ops/bootstrap/pkg/gate"
	"github.com/homelab-ops/bootstrap/pkg/patches"
)

const revisionAnnotation = "deployment.kubernetes.io/revision"

// After proves the apply landed: the live Deployments carry the effective
// flags computed at render, and every rollout finished with no pod of an
// older template left.
func After(ctx context.Context, cl *apply.Cluster, rendered []appsv1.Deployment) []gate.Check {
	flags, roll := GateFlagsLive.New(), GateRollout.New()
	var flagGaps, rollGaps []string
	for _, want := range rendered {
		name := "Deployment/" + want.Namespace + "/" + want.Name
		var live appsv1.Deployment
		if err := cl.Client.Get(ctx, client.ObjectKeyFromObject(&want), &live); err != nil {
			flagGaps = append(flagGaps, fmt.Sprintf("%s: %v", name, err))
			rollGaps = append(rollGaps, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		for _, wc := range want.Spec.Template.Spec.Containers {
			gaps, ev := compareFlags(name, wc, live.Spec.Template.Spec.Containers)
			flagGaps = append(flagGaps, gaps...)
			flags.Evidence = append(flags.Evidence, ev...)
		}
		gap, ev := rolledOut(ctx, cl, &live)
		if gap != "" {
			rollGaps = append(rollGaps, gap)
		}
		roll.Evidence = append(roll.Evidence, ev)
	}
	if len(flagGaps) > 0 {
		flags.Verdict = gate.Fail
		flags.Message = fmt.Sprintf("%d live container(s) differ from the render: something else changed them or the apply did not land; re-run, and look for another manager of these Deployments", len(flagGaps))
		flags.Evidence = append(flagGaps, flags.Evidence...)
	} else {
		flags.Verdict = gate.Pass
		flags.Message = fmt.Sprintf("the effective flags of %d Deployment(s) on the cluster equal the render", len(rendered))
	}
	if len(rollGaps) > 0 {
		roll.Verdict = gate.Fail
		roll.Message = fmt.Sprintf("%d rollout(s) not finished: pods of an older template still run or the new ReplicaSet is not available", len(rollGaps))
		roll.Evidence = append(rollGaps, roll.Evidence...)
	} else {
		roll.Verdict = gate.Pass
		roll.Message = fmt.Sprintf("%d Deployment(s) run only pods of their current template, all available", len(rendered))
	}
	return []gate.Check{flags, roll}
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

// rolledOut checks that the Deployment's current ReplicaSet is fully
// available and no pod of another template remains.
func rolledOut(ctx context.Context, cl *apply.Cluster, d *appsv1.Deployment) (gap, evidence string) {
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
	var rss appsv1.ReplicaSetList
	if err := cl.Client.List(ctx, &rss, client.InNamespace(d.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return fmt.Sprintf("%s: list ReplicaSets: %v", name, err), ""
	}
	var current *appsv1.ReplicaSet
	for i := range rss.Items {
		rs := &rss.Items[i]
		if metav1.IsControlledBy(rs, d) && rs.Annotations[revisionAnnotation] == d.Annotations[revisionAnnotation] {
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
	var pods corev1.PodList
	if err := cl.Client.List(ctx, &pods, client.InNamespace(d.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return fmt.Sprintf("%s: list pods: %v", name, err), ""
	}
	var old []string
	for _, p := range pods.Items {
		if p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != hash {
			old = append(old, p.Name)
		}
	}
	if len(old) > 0 {
		return fmt.Sprintf("%s: pods of an older template remain: %v", name, old), ""
	}
	return "", fmt.Sprintf("%s: revision %s, ReplicaSet %s %d/%d available, %d pod(s) all of the current template", name, d.Annotations[revisionAnnotation], current.Name, current.Status.AvailableReplicas, want, len(pods.Items))
}
