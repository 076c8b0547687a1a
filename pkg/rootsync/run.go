package rootsync

import (
	"context"
	"fmt"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/homelab-ops/bootstrap/pkg/apply"
	"github.com/homelab-ops/bootstrap/pkg/gate"
	"github.com/homelab-ops/bootstrap/pkg/wait"
)

// RunOptions drive Run.
type RunOptions struct {
	DryRun  bool
	Timeout time.Duration
	// Source, when non-nil, is the temporary source to use (--source-url).
	Source *Temporary
	// Now stamps a new temporary source; time.Now when nil.
	Now      func() time.Time
	Progress apply.Progress
}

// Run is the cluster part of sync: the cluster before-gates, the temporary
// source decision, the plan, the apply, and the after-gates. It adds to
// report (checks, objects, changed, facts, warnings). r must have passed
// Static.
func Run(ctx context.Context, cl *apply.Cluster, r *Render, o RunOptions, report *gate.Report) error {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Progress == nil {
		o.Progress = func(string) {}
	}
	report.Add(DecryptionSecrets(ctx, cl.Client, r)...)

	// The temporary source: asked for, or already in place and kept.
	src := r.Source
	live, err := liveSource(ctx, cl.Client, src.GetNamespace(), src.GetName())
	if err != nil {
		return err
	}
	var liveTmp *Temporary
	if live != nil {
		liveTmp, _ = TemporaryOf(live)
	}
	tc := check(CheckTemporary, gate.Before, "source of the GitRepository")
	srcID := fmt.Sprintf("GitRepository %s/%s", src.GetNamespace(), src.GetName())
	declared := DeclaredOf(src)
	var tmp *Temporary
	switch {
	case o.Source != nil:
		tmp = &Temporary{URL: o.Source.URL, Branch: o.Source.Branch, Secret: o.Source.Secret, Since: o.Now()}
		if liveTmp.Same(tmp) && !liveTmp.Since.IsZero() {
			tmp.Since = liveTmp.Since
		}
		tc.Verdict = gate.Pass
		tc.Message = fmt.Sprintf("%s on the temporary source %s (git declares %s); kustomize-controller leaves it alone until `bootstrap cutover`", srcID, tmp.URL, declared.URL)
		if liveTmp != nil && !liveTmp.Same(tmp) {
			tc.Message += fmt.Sprintf("; replaces the temporary source %s set %s", liveTmp.URL, liveTmp.Since.Format(time.RFC3339))
		}
	case liveTmp != nil:
		tmp = liveTmp
		tc.Verdict = gate.Warn
		tc.Message = fmt.Sprintf("%s is on the temporary source %s since %s: kept (git declares %s); run `bootstrap cutover` to move to the final source, or pass --source-url to change it",
			srcID, tmp.URL, tmp.Since.Format(time.RFC3339), declared.URL)
		report.Warn(tc.Message)
	default:
		tc.Verdict = gate.Pass
		tc.Message = fmt.Sprintf("%s from git's declared url %s", srcID, declared.URL)
	}
	report.Add(tc)
	if tmp != nil {
		if err := Override(src, tmp); err != nil {
			return err
		}
		report.Facts["temporarySource"] = tmp.URL
		report.Facts["temporarySince"] = tmp.Since.UTC().Format(time.RFC3339)
	}
	report.Facts["declaredURL"] = declared.URL
	if code := report.ExitCode(); code != gate.ExitOK {
		skipApplied(report, "a before-gate did not pass: nothing was applied")
		return nil
	}

	plan, err := apply.Plan(ctx, cl, r.Objects, nil)
	if err != nil {
		return err
	}
	report.Objects = plan
	report.Changed = apply.Changed(plan)
	if o.DryRun {
		skipApplied(report, "dry run: nothing was applied")
		// A dry run proves nothing about the cluster: the after-gates are
		// optional skips, not a failure.
		return nil
	}
	applied, err := apply.Apply(ctx, cl, r.Objects, plan, o.Timeout)
	if len(applied) > 0 {
		report.Objects = applied
		report.Changed = apply.Changed(applied)
	}
	ac := check(CheckApplied, gate.After, "the root was applied")
	if err != nil {
		ac.Verdict, ac.Message = gate.Fail, err.Error()
		report.Add(ac)
		return nil
	}
	ac.Verdict = gate.Pass
	ac.Message = fmt.Sprintf("%d object(s) server-side applied from %s", len(applied), r.Options.Path)
	report.Add(ac)
	report.Add(After(ctx, cl, r, tmp, o.Timeout, o.Progress)...)
	return nil
}

func skipApplied(report *gate.Report, why string) {
	for _, id := range []string{CheckApplied, CheckSourceReady, CheckRootApplied} {
		c := check(id, gate.After, "not run")
		c.Verdict, c.Message, c.Optional = gate.Skip, why, true
		report.Add(c)
	}
}

// After proves the sync: the GitRepository is Ready with an artifact (at
// the temporary URL when there is one), and the root Kustomization is Ready
// with lastAppliedRevision equal to that artifact's revision.
func After(ctx context.Context, cl *apply.Cluster, r *Render, tmp *Temporary, timeout time.Duration, progress apply.Progress) []gate.Check {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	src := r.Source
	sc := check(CheckSourceReady, gate.After, "the GitRepository is Ready with an artifact")
	wantURL := DeclaredOf(src).URL
	progress(fmt.Sprintf("waiting for GitRepository %s/%s to be Ready with an artifact from %s (timeout %s)", src.GetNamespace(), src.GetName(), wantURL, timeout))
	gr, err := wait.For(wctx, cl.Client, &sourcev1.GitRepositoryList{}, src.GetNamespace(), src.GetName(), func(g *sourcev1.GitRepository) (bool, string) {
		ok, desc := readyCondition(g.Generation, g.Status.Conditions)
		return ok && g.Status.Artifact != nil && g.Spec.URL == wantURL, desc
	})
	rc := check(CheckRootApplied, gate.After, "the root Kustomization is Ready at the artifact's revision")
	if err != nil {
		sc.Verdict, sc.Message = gate.Fail, fmt.Sprintf("GitRepository %s", err)
		rc.Verdict, rc.Message = gate.Skip, "no artifact to compare with"
		return []gate.Check{sc, rc}
	}
	rev := gr.Status.Artifact.Revision
	sc.Verdict = gate.Pass
	sc.Message = fmt.Sprintf("GitRepository %s/%s Ready, artifact %s from %s", gr.Namespace, gr.Name, rev, gr.Spec.URL)
	sc.Evidence = []string{"status.artifact.revision=" + rev, "spec.url=" + gr.Spec.URL}
	root := r.Root
	progress(fmt.Sprintf("waiting for Kustomization %s/%s to apply %s", root.Namespace, root.Name, rev))
	k, err := wait.For(wctx, cl.Client, &kustomizev1.KustomizationList{}, root.Namespace, root.Name, func(k *kustomizev1.Kustomization) (bool, string) {
		ok, desc := readyCondition(k.Generation, k.Status.Conditions)
		return ok && k.Status.LastAppliedRevision == rev, desc + "; lastAppliedRevision=" + k.Status.LastAppliedRevision
	})
	if err != nil {
		rc.Verdict, rc.Message = gate.Fail, fmt.Sprintf("Kustomization %s (want lastAppliedRevision %s)", err, rev)
		return []gate.Check{sc, rc}
	}
	rc.Verdict = gate.Pass
	rc.Message = fmt.Sprintf("Kustomization %s/%s Ready, lastAppliedRevision %s", k.Namespace, k.Name, k.Status.LastAppliedRevision)
	rc.Evidence = []string{"status.lastAppliedRevision=" + k.Status.LastAppliedRevision}
	out := []gate.Check{sc, rc}
	if tmp != nil {
		// The root has now applied git's GitRepository: the override must
		// have survived it.
		tc := check(CheckTemporary+"-kept", gate.After, "the temporary source survived the root's reconcile")
		live, err := liveSource(ctx, cl.Client, src.GetNamespace(), src.GetName())
		url := ""
		if live != nil {
			url, _, _ = unstructured.NestedString(live.Object, "spec", "url")
		}
		switch {
		case err != nil:
			tc.Verdict, tc.Message = gate.Skip, err.Error()
		case live != nil && url == tmp.URL && live.GetAnnotations()[ReconcileAnnotation] == ReconcileDisabled:
			tc.Verdict = gate.Pass
			tc.Message = fmt.Sprintf("spec.url is still %s after the root applied %s", url, rev)
		default:
			tc.Verdict = gate.Fail
			tc.Message = fmt.Sprintf("spec.url is %q after the root applied %s, not the temporary %s: the override was undone", url, rev, tmp.URL)
		}
		out = append(out, tc)
	}
	return out
}
