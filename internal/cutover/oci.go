package cutover

// The cutover of an OCI root served by --serve (issue 46 item 4b): a probe
// OCIRepository with the declared URL, ref and Secrets shows that
// source-controller, from inside the cluster, pulls the declared artifact
// and that it is the digest the registry serves for the declared ref (the
// same revision check as sync's, rootsync.RegistryRevision); then the
// OCIRepository gets what git declares back (rootsync.DeclaredOCIOf), is
// handed back to kustomize-controller, the serve Secret is deleted, every
// Kustomization reading it is walked to the new revision, and the serving
// process ends.

import (
	"context"
	"fmt"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/internal/kube"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/internal/rootsync"
	"github.com/homelab-ops/bootstrap/internal/serve"
	"github.com/homelab-ops/bootstrap/internal/wait"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// kind is the source's kind, GitRepository unless set.
func (o Options) kind() string {
	if o.Kind == "" {
		return sourcev1.GitRepositoryKind
	}
	return o.Kind
}

// liveOCI reads the OCIRepository; nil when there is none.
func liveOCI(ctx context.Context, c client.Client, ns, name string) (*unstructured.Unstructured, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(sourcev1.GroupVersion.WithKind(sourcev1.OCIRepositoryKind))
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, live)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read OCIRepository %s/%s: %w", ns, name, err)
	}
	return live, nil
}

// ociSpecOf is the object to apply for an OCIRepository: only its identity,
// the spec given and annotations ann (ours left out are removed by the
// server-side apply).
func ociSpecOf(ns, name string, spec map[string]any, ann map[string]string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	o.SetGroupVersionKind(sourcev1.GroupVersion.WithKind(sourcev1.OCIRepositoryKind))
	o.SetNamespace(ns)
	o.SetName(name)
	if len(ann) > 0 {
		o.SetAnnotations(ann)
	}
	return o
}

// ociReady waits for the OCIRepository ns/name to be Ready from url with an
// artifact, having handled the pull token asked for, or failed by
// source-controller (its reason then, not a timeout), and proves the
// artifact is the digest the registry serves for its ref.
func ociReady(ctx context.Context, cl *apply.Cluster, ns, name, url, token string, timeout time.Duration, progress func(string)) (string, error) {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last, failed := "", ""
	o, err := wait.For(wctx, cl.Client, &sourcev1.OCIRepositoryList{}, ns, name, func(o *sourcev1.OCIRepository) (bool, string) {
		ok, bad, desc := rootsync.OCISourceReady(o, token, url)
		if bad {
			failed = desc
			return true, desc
		}
		if desc != last {
			last = desc
			progress(fmt.Sprintf("OCIRepository %s/%s from %s: %s", ns, name, url, desc))
		}
		return ok, desc
	})
	switch {
	case failed != "":
		return "", fmt.Errorf("source-controller failed it: %s", failed)
	case err != nil:
		return "", err
	}
	rev := o.Status.Artifact.Revision
	served, err := rootsync.RegistryRevision(wctx, cl.Client, o, rev)
	switch {
	case err != nil:
		return rev, fmt.Errorf("artifact %s, but the registry could not be read for its ref: %w", rev, err)
	case served != rev:
		return rev, fmt.Errorf("artifact %s, but the registry serves %s for its ref now", rev, served)
	}
	return rev, nil
}

// ociProbe creates the probe OCIRepository: the declared spec under
// another name, proving the final source from inside the cluster without
// touching the root's; remove deletes it and waits until it is gone.
func (p *WhenReadyPhase) ociProbe(ctx context.Context, report *verify.Report, spec map[string]any) (probe *unstructured.Unstructured, remove func(), err error) {
	o := p.o
	pspec := map[string]any{}
	for k, v := range spec {
		pspec[k] = v
	}
	pspec["interval"], pspec["timeout"] = "30s", "20s"
	probe = ociSpecOf(o.Namespace, o.Name+ProbeSuffix, pspec, nil)
	probe.SetLabels(map[string]string{serve.SecretLabel: "probe"})
	if _, err := apply.Object(ctx, p.cl.Manager, probe); err != nil {
		return nil, nil, fmt.Errorf("create the probe OCIRepository %s/%s: %w", o.Namespace, probe.GetName(), err)
	}
	return probe, func() {
		dctx, cancel := context.WithTimeout(kube.Detach(ctx), 30*time.Second)
		defer cancel()
		err := p.cl.Client.Delete(dctx, &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: probe.GetName()}})
		if err == nil || apierrors.IsNotFound(err) {
			err = wait.Gone[*sourcev1.OCIRepository](dctx, p.cl.Client, &sourcev1.OCIRepositoryList{}, o.Namespace, probe.GetName())
		}
		if err != nil {
			report.Warn(fmt.Sprintf("delete the probe OCIRepository %s/%s: %v (delete it by hand)", o.Namespace, probe.GetName(), err))
		}
	}, nil
}

// doOCI is --cutover-when-ready for an OCI root.
func (p *WhenReadyPhase) doOCI(ctx context.Context, run *pipeline.Run) error {
	o, report := p.o, run.Report
	id := fmt.Sprintf("OCIRepository %s/%s", o.Namespace, o.Name)
	rc := GateFinalReachable.New()
	live, err := liveOCI(ctx, p.cl.Client, o.Namespace, o.Name)
	if err != nil {
		return err
	}
	if live == nil {
		rc.Verdict, rc.Message = verify.Fail, id+" not found: nothing to cut over"
		report.Add(rc)
		return nil
	}
	declared, err := rootsync.DeclaredOCIOf(live)
	if err != nil {
		return err
	}
	liveURL, _, _ := unstructured.NestedString(live.Object, "spec", "url")
	if declared == nil {
		rc.Verdict, rc.Message = verify.Pass, fmt.Sprintf("%s is not on a temporary source (it reads %s): nothing to cut over", id, liveURL)
		report.Add(rc)
		return nil
	}
	spec, _, _ := unstructured.NestedMap(declared.Object, "spec")
	finalURL, _, _ := unstructured.NestedString(spec, "url")
	tmpRev, _, _ := unstructured.NestedString(live.Object, "status", "artifact", "revision")
	tmpSecret, _, _ := unstructured.NestedString(live.Object, "spec", "secretRef", "name")
	if run.DryRun {
		rc.Verdict, rc.Message = verify.Skip, fmt.Sprintf("dry run: would wait for %s to be Ready from inside the cluster at the digest the registry serves, then cut over from %s", finalURL, liveURL)
		report.Add(rc)
		return nil
	}
	report.Changed = true

	// 1. The probe: the declared spec under another name.
	probe, removeProbe, err := p.ociProbe(ctx, report, spec)
	if err != nil {
		return err
	}
	defer removeProbe()
	run.Progressf("waiting for the final source %s to be Ready from inside the cluster (probe %s, timeout %s)", finalURL, probe.GetName(), o.Wait)
	probeRev, err := ociReady(ctx, p.cl, o.Namespace, probe.GetName(), finalURL, "", o.Wait, run.Progress)
	if err != nil {
		rc.Verdict = verify.Fail
		rc.Message = fmt.Sprintf("the final source %s is not Ready from inside the cluster within --cutover-timeout %s: %v; the cluster stays on the temporary source %s (still served); push the artifact to the declared registry (flux push artifact), fix what the message names, then cut over",
			finalURL, o.Wait, err, liveURL)
		report.Add(rc)
		return nil
	}
	rc.Verdict = verify.Pass
	rc.Message = fmt.Sprintf("the probe %s/%s reads %s Ready at %s, the digest the registry serves (the served artifact was %s: an OCI artifact's digest covers its build, so the two differ unless the same artifact was pushed)", o.Namespace, probe.GetName(), finalURL, probeRev, tmpRev)
	report.Add(rc)

	// 2. Switch and hand back in one apply: the probe proved the source,
	// so no rollback is needed; our annotations go with it.
	run.Progressf("switching %s to %s and handing it back to git", id, finalURL)
	back := ociSpecOf(o.Namespace, o.Name, spec, nil)
	if _, err := apply.Object(ctx, p.cl.Manager, back); err != nil {
		return fmt.Errorf("server-side apply %s: %w", id, err)
	}
	token, err := rootsync.RequestReconcileToken(ctx, p.cl.Client, back)
	if err != nil {
		return err
	}
	fr := GateFinalReady.New()
	rev, err := ociReady(ctx, p.cl, o.Namespace, o.Name, finalURL, token, o.Timeout, run.Progress)
	if err != nil {
		fr.Verdict, fr.Message = verify.Fail, fmt.Sprintf("%s from %s: %v", id, finalURL, err)
		report.Add(fr)
		return nil
	}
	fr.Verdict, fr.Message = verify.Pass, fmt.Sprintf("%s Ready from %s, artifact %s: the digest the registry serves for its ref", id, finalURL, rev)
	report.Add(fr)
	hb, err := handBackGate(ctx, p.cl, back, id, finalURL, tmpSecret, func() (*unstructured.Unstructured, error) {
		return liveOCI(ctx, p.cl.Client, o.Namespace, o.Name)
	})
	if err != nil {
		return err
	}
	report.Add(hb)
	co := Options{Namespace: o.Namespace, Name: o.Name, Kind: sourcev1.OCIRepositoryKind, Timeout: o.Timeout, Progress: run.Progress}
	report.Add(consumersReady(ctx, p.cl, co, rev))
	report.Facts["revision"] = rev
	if o.ServeDir != "" && hb.Verdict == verify.Pass {
		report.Add(serveStopped(o.ServeDir, run, 30*time.Second, 5*time.Second))
	}
	return nil
}
