package controllers

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/internal/customize"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/pkg/components"
	"github.com/homelab-ops/bootstrap/pkg/patches"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// GateDrift is status's summary of step 1: what an apply of the render
// would do, named as the plan names it, found by reading only (no dry run).
var GateDrift = verify.Def{ID: "controllers.drift", Phase: PhaseName, Stage: verify.After, Title: "the cluster holds the render (no drift)"}

// Labels the render puts on every Flux Deployment.
const (
	partOfLabel  = "app.kubernetes.io/part-of"
	versionLabel = "app.kubernetes.io/version"
)

// StatusOptions drive the read-only controllers phase.
type StatusOptions struct {
	Render customize.Options
	// LiveVersion renders the Flux version the live Deployments carry
	// (their app.kubernetes.io/version label) instead of Render's;
	// LiveComponents renders the components that run (the Flux
	// Deployments of the namespace, among those the bundle knows).
	LiveVersion, LiveComponents bool
}

// StatusPhase is step 1's after-gates on their own, for `bootstrap status`:
// render (offline, with the overlays' own gates), then read the cluster —
// every rendered object present (one list per kind), the live Deployments'
// effective flags and images against the render, the rollouts finished —
// and name the drift as the plan would, without a dry run. It writes
// nothing.
type StatusPhase struct {
	pipeline.Base // Do: nothing is changed
	o             StatusOptions
	connect       func() (*apply.Cluster, error)
	cl            *apply.Cluster
	out           *customize.Output
	objs          []*unstructured.Unstructured
}

var _ pipeline.Phase = (*StatusPhase)(nil)

// NewStatusPhase is the read-only controllers phase.
func NewStatusPhase(o StatusOptions, connect func() (*apply.Cluster, error)) *StatusPhase {
	return &StatusPhase{o: o, connect: connect}
}

// Name implements pipeline.Phase.
func (p *StatusPhase) Name() string { return PhaseName }

// Gates implements pipeline.Phase.
func (p *StatusPhase) Gates() []verify.Def {
	return append(patches.Gates(), GateReachable, GateDrift, GateFlagsLive, GateRollout)
}

// Before connects (one GET of the version), picks the live version and
// components when asked, and renders.
func (p *StatusPhase) Before(ctx context.Context, run *pipeline.Run) ([]verify.Check, error) {
	cl, err := p.connect()
	if err != nil {
		return nil, err
	}
	p.cl = cl
	reach, _ := cl.Reachable(GateReachable)
	if reach.Verdict != verify.Pass {
		reach.Verdict = verify.Skip
		reach.Message += ": nothing on the cluster could be checked"
		return []verify.Check{reach}, nil
	}
	ro := p.o.Render
	if p.o.LiveVersion || p.o.LiveComponents {
		c := &ro.Components
		version, names, err := liveFlux(ctx, cl, c.Namespace)
		switch {
		case err != nil:
			return []verify.Check{reach}, fmt.Errorf("list the Flux Deployments in %s: %w", c.Namespace, err)
		case len(names) == 0:
			run.Report.Facts["controllers.live"] = "no Flux Deployment (label " + partOfLabel + "=flux) in " + c.Namespace
		default:
			run.Report.Facts["controllers.live"] = fmt.Sprintf("%s: %s", orUnknown(version), strings.Join(names, ","))
		}
		if p.o.LiveVersion && version != "" && version != c.FluxVersion {
			if _, err := components.EmbeddedBundle(version); err != nil {
				run.Report.Warn(fmt.Sprintf("the live Deployments run Flux %s, which this build does not embed: compared with Flux %s instead (pass --manifests with that release's manifests to compare with its own render)", version, c.FluxVersion))
			} else {
				c.FluxVersion = version
			}
		}
		if p.o.LiveComponents && len(names) > 0 {
			if b, err := components.EmbeddedBundle(c.FluxVersion); err == nil && ro.Manifests == "" {
				var known []string
				for _, n := range names {
					if slices.Contains(b.Components, n) {
						known = append(known, n)
					}
				}
				if len(known) > 0 {
					c.Components, c.ComponentsExtra = known, nil
				}
			}
		}
	}
	rp := customize.NewPhase(ro)
	checks, err := rp.Before(ctx, run)
	checks = append([]verify.Check{reach}, checks...)
	if err != nil || verify.Blocks(checks...) {
		return checks, err
	}
	p.out = rp.Output
	p.objs, err = apply.ReadObjects(p.out.YAML)
	return checks, err
}

// liveFlux reads the Flux Deployments of ns (one list): the version label
// most of them carry, and their names.
func liveFlux(ctx context.Context, cl *apply.Cluster, ns string) (string, []string, error) {
	var ds appsv1.DeploymentList
	if err := cl.Client.List(ctx, &ds, client.InNamespace(ns), client.MatchingLabels{partOfLabel: "flux"}); err != nil {
		return "", nil, err
	}
	votes := map[string]int{}
	var names []string
	for _, d := range ds.Items {
		names = append(names, d.Name)
		if v := d.Labels[versionLabel]; v != "" {
			votes[v]++
		}
	}
	sort.Strings(names)
	version := ""
	for v, n := range votes {
		if version == "" || n > votes[version] || n == votes[version] && v > version {
			version = v
		}
	}
	return version, names, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "version unknown"
	}
	return "Flux " + s
}

// After reads the cluster: the rendered objects (one list per kind), the
// flags and rollouts (After, the same gates step 1 proves with), and the
// drift as plan lines.
func (p *StatusPhase) After(ctx context.Context, _ *pipeline.Run) []verify.Check {
	live := apply.ReadLive(ctx, p.cl.Client, p.objs, nil)
	var lines, unread []string
	instance, deployments, byOperator := "", 0, 0
	for _, o := range p.objs {
		l, err := live.Get(ctx, o)
		if err == nil && l != nil && o.GetKind() == "Deployment" {
			deployments++
			if in, ok := operatorOf(l.GetLabels()); ok {
				byOperator++
				instance = in
			}
		}
		switch {
		case err != nil:
			unread = append(unread, fmt.Sprintf("%s: %v", apply.ID(o), err))
		case l == nil:
			lines = append(lines, "created    "+apply.ID(o))
		case o.GetKind() == "Deployment":
			var want, got appsv1.Deployment
			if err := fromUnstructured(o, &want); err != nil {
				unread = append(unread, fmt.Sprintf("%s: %v", apply.ID(o), err))
				continue
			}
			if err := fromUnstructured(l, &got); err != nil {
				unread = append(unread, fmt.Sprintf("%s: %v", apply.ID(o), err))
				continue
			}
			var gaps []string
			for _, wc := range want.Spec.Template.Spec.Containers {
				g, _ := compareFlags(apply.ID(o), wc, got.Spec.Template.Spec.Containers)
				gaps = append(gaps, g...)
			}
			if len(gaps) > 0 {
				lines = append(lines, "configured "+apply.ID(o)+"  (pod template changes: restarts): "+strings.Join(gaps, "; "))
			}
		}
	}
	drift := GateDrift.New()
	if deployments > 0 && byOperator == deployments {
		// The operator reconciles the controllers to its FluxInstance, not
		// to this tool's render: drift from the render is not a defect, and
		// the flags are the instance's. The rollouts still are the
		// cluster's health.
		drift.Verdict = verify.Warn
		drift.Message = fmt.Sprintf("the Flux Operator manages the controllers (FluxInstance %s): they follow its spec, not this tool's render, so drift from the render of Flux %s is not judged", instance, p.out.Facts["fluxVersion"])
		drift.Evidence = lines
		flags := GateFlagsLive.New()
		flags.Verdict, flags.Message = verify.Warn, "not compared: the Flux Operator (FluxInstance "+instance+") sets the controllers' flags"
		out := []verify.Check{drift, flags}
		for _, c := range After(ctx, p.cl, p.out.Overlay.Final) {
			if c.ID != GateFlagsLive.ID {
				out = append(out, c)
			}
		}
		return out
	}
	switch {
	case len(lines) > 0:
		drift.Verdict = verify.Fail
		drift.Message = fmt.Sprintf("%d object(s) differ from the render of Flux %s with %s: %s; `bootstrap controllers` would put them back (run it with --dry-run to see its plan)",
			len(lines), p.out.Facts["fluxVersion"], p.out.Facts["overlays"], strings.Join(strings.Fields(lines[0]), " "))
		drift.Evidence = append(lines, unread...)
	case len(unread) > 0:
		drift.Verdict = verify.Skip
		drift.Message = fmt.Sprintf("%d rendered object(s) could not be read: %s", len(unread), unread[0])
		drift.Evidence = unread
	default:
		drift.Verdict = verify.Pass
		drift.Message = fmt.Sprintf("all %d object(s) of the render of Flux %s with %s exist; the Deployments' flags and images equal the render", len(p.objs), p.out.Facts["fluxVersion"], p.out.Facts["overlays"])
	}
	return append([]verify.Check{drift}, After(ctx, p.cl, p.out.Overlay.Final)...)
}

func fromUnstructured(u *unstructured.Unstructured, d *appsv1.Deployment) error {
	return runtimeConverter.FromUnstructured(u.Object, d)
}

var runtimeConverter = runtime.DefaultUnstructuredConverter
