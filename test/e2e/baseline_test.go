//go:build e2e

package e2e

// The one state every test on the suite's shared sandbox starts from, and
// the helper that establishes it: no test relies on what another left, so
// each passes alone (-run TestX) and in any order (-shuffle=on).

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/ssa"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	apiwait "k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/agekey"
	"github.com/homelab-ops/bootstrap/internal/controllers"
	"github.com/homelab-ops/bootstrap/internal/lock"
	"github.com/homelab-ops/bootstrap/internal/sandbox/runner"
)

// ensureFlux brings the shared sandbox to the state every test on it
// starts from, whatever ran before (or nothing did):
//   - the controller runner that follows the Deployments' args (a test may
//     have swapped in the negative control);
//   - Flux v2.9.5 as `bootstrap render` renders it, applied with forced
//     ownership, so that drift a test left on the Deployments (the strict
//     gate turned off, a flag removed or added) is put back;
//   - source- and kustomize-controller running from those templates;
//   - nothing of another test: no Kustomization or GitRepository in
//     flux-system (their finalizers prune what they applied, and the pruned
//     namespaces are gone), no cluster-vars, no age-key Secret, no lock.
//
// When the sandbox is already there it changes nothing and takes a second.
func ensureFlux(t testing.TB) {
	t.Helper()
	ctx, t0 := timeoutCtx(t, 5*time.Minute), time.Now()
	if suite.runner == nil || suite.ignoreArgs {
		if suite.stopRunner != nil {
			suite.stopRunner()
		}
		if err := suite.startRunner(false); err != nil {
			t.Fatalf("start the controller runner: %v", err)
		}
	}
	rm := resourceManager()
	cs, err := rm.ApplyAllStaged(ctx, render(t, "--flux-version", "v2.9.5"), ssa.DefaultApplyOptions())
	if err != nil {
		t.Fatalf("install Flux: %v", err)
	}
	if err := rm.WaitForSetWithContext(ctx, cs.ToObjMetadataSet(), ssa.WaitOptions{Interval: 500 * time.Millisecond, Timeout: 2 * time.Minute}); err != nil {
		t.Fatalf("Flux not ready: %v", err)
	}
	for _, name := range runner.Runnable {
		suite.waitRunning(ctx, t, name)
	}
	tFlux := time.Since(t0)
	if err := removeFixtures(ctx); err != nil {
		t.Fatalf("remove what earlier tests left: %v", err)
	}
	if err := unmanageFlux(ctx); err != nil {
		t.Fatalf("hand the controllers back from an earlier test's root: %v", err)
	}
	t.Logf("ensureFlux: %s (Flux as rendered and running %s, earlier tests' objects removed %s)",
		time.Since(t0).Round(time.Millisecond), tFlux.Round(time.Millisecond), (time.Since(t0) - tFlux).Round(time.Millisecond))
}

// unmanageFlux removes the manager labels (controllers.ManagerLabels) that
// an earlier test's root left on the controllers' Deployments (the flux
// bootstrap layout applies Flux itself, pruning off), so the next test
// starts from Flux as this tool installs it. It runs after removeFixtures: no root is left to re-add them.
func unmanageFlux(ctx context.Context) error {
	var ds appsv1.DeploymentList
	if err := suite.client.List(ctx, &ds, client.InNamespace(fluxNS)); err != nil {
		return err
	}
	for i := range ds.Items {
		d := &ds.Items[i]
		labels := map[string]any{}
		for _, k := range controllers.ManagerLabels() {
			if _, ok := d.Labels[k]; ok {
				labels[k] = nil
			}
		}
		if len(labels) == 0 {
			continue
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
		if err != nil {
			return err
		}
		if err := suite.client.Patch(ctx, d, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return fmt.Errorf("Deployment %s/%s: %w", d.Namespace, d.Name, err)
		}
	}
	return nil
}

// removeFixtures deletes what the tests create on the shared sandbox: every
// Kustomization (their finalizers prune what they applied) and GitRepository
// of flux-system, cluster-vars, the age-key Secrets and the cluster lock;
// then waits until they and the namespaces they pruned are gone.
func removeFixtures(ctx context.Context) error {
	for _, o := range []client.Object{&kustomizev1.Kustomization{}, &sourcev1.GitRepository{}} {
		if err := suite.client.DeleteAllOf(ctx, o, client.InNamespace(fluxNS)); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	// HelmReleases and chart sources live in their apps' namespaces; the
	// Kustomizations' prune removes them, but one left behind by a failed
	// test must not reach the next bring-up.
	var nss corev1.NamespaceList
	if err := suite.client.List(ctx, &nss); err != nil {
		return err
	}
	for _, ns := range nss.Items {
		for _, o := range []client.Object{&helmv2.HelmRelease{}, &sourcev1.OCIRepository{}, &sourcev1.HelmRepository{}} {
			if err := suite.client.DeleteAllOf(ctx, o, client.InNamespace(ns.Name)); err != nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
				return err
			}
		}
	}
	for _, o := range []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: fluxNS, Name: "cluster-vars"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: fluxNS, Name: agekey.DefaultSecretName}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: fluxNS, Name: "sops-age-wrong"}},
	} {
		if err := suite.client.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	if err := suite.cs.CoordinationV1().Leases(fluxNS).Delete(ctx, lock.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	for _, l := range []client.ObjectList{&kustomizev1.KustomizationList{}, &sourcev1.GitRepositoryList{}} {
		if err := waitEmpty(ctx, l); err != nil {
			return err
		}
	}
	// The finalizers pruned the fixtures' namespaces; the next bring-up
	// must not apply into one still Terminating (its Kustomizations would
	// fail until the namespace controller finished, a minute here).
	if err := apiwait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		var nss corev1.NamespaceList
		if err := suite.client.List(ctx, &nss); err != nil {
			return false, err
		}
		for _, ns := range nss.Items {
			if ns.Status.Phase == corev1.NamespaceTerminating {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		return fmt.Errorf("namespaces still terminating: %w", err)
	}
	return nil
}

// waitEmpty lists, then watches until the list in flux-system is empty.
func waitEmpty(ctx context.Context, l client.ObjectList) error {
	for {
		if err := suite.client.List(ctx, l, client.InNamespace(fluxNS)); err != nil {
			return err
		}
		items, _ := metaItems(l)
		if items == 0 {
			return nil
		}
		w, err := suite.client.Watch(ctx, l, client.InNamespace(fluxNS), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: l.GetResourceVersion()}})
		if err != nil {
			return err
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Deleted || ev.Type == watch.Error {
				break
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

func metaItems(l client.ObjectList) (int, error) {
	switch v := l.(type) {
	case *kustomizev1.KustomizationList:
		return len(v.Items), nil
	case *sourcev1.GitRepositoryList:
		return len(v.Items), nil
	}
	return 0, nil
}
