// Package cutover is the end of a cold bring-up: it moves the GitRepository
// that sync put on a temporary source (internal/rootsync records it in
// annotations) to its final source, waits for the final artifact, hands
// the object back to git, and proves every Kustomization reading it Ready
// at the new revision, or rolls back to the temporary source. WhenReady is
// `up --cutover-when-ready`: the same cutover once a probe shows the final
// source Ready from inside the cluster, then the serving process ended.
package cutover

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/internal/converge"
	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/internal/input"
	"github.com/homelab-ops/bootstrap/internal/kube"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/internal/rootsync"
	"github.com/homelab-ops/bootstrap/internal/serve"
	"github.com/homelab-ops/bootstrap/internal/wait"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// PhaseName is the cutover phase's name in reports.
const PhaseName = "cutover"

// Gates of the cutover phase.
var (
	GateCutoverSource  = verify.Def{ID: "cutover.source", Phase: PhaseName, Stage: verify.Before, Title: "the GitRepository is on a temporary source"}
	GateDeclaredURL    = verify.Def{ID: "cutover.declared-url", Phase: PhaseName, Stage: verify.Before, Title: "the final URL is the one git declares"}
	GateFinalReady     = verify.Def{ID: "cutover.final-ready", Phase: PhaseName, Stage: verify.After, Title: "the final source is Ready with an artifact"}
	GateFinalRevision  = verify.Def{ID: "cutover.final-revision", Phase: PhaseName, Stage: verify.After, Title: "the final source is at the same or a newer revision"}
	GateRollback       = verify.Def{ID: "cutover.rollback", Phase: PhaseName, Stage: verify.After, Title: "rolled back to the temporary source"}
	GateHandedBack     = verify.Def{ID: "cutover.handed-back", Phase: PhaseName, Stage: verify.After, Title: "the GitRepository is back under git's control"}
	GateConsumersReady = verify.Def{ID: "cutover.kustomizations-ready", Phase: PhaseName, Stage: verify.After, Title: "every Kustomization reading the source is Ready at its revision"}
)

// Options drive Cutover.
type Options struct {
	Namespace, Name string
	// Kind is the source's kind: "" (GitRepository) or OCIRepository
	// (oci.go; its consumers are walked the same way).
	Kind string
	// To is the final URL; "" means the URL git declares (recorded by sync).
	To      string
	Timeout time.Duration
	// DryRun says what would happen and changes nothing.
	DryRun   bool
	Progress apply.Progress
}

// applyObject is the GitRepository to server-side apply: live's spec with
// url and secretRef replaced, spec.ref restored to the declared one unless
// keepRef, and exactly the annotations given (ours; an annotation this tool
// applied before and leaves out is removed).
func applyObject(live *unstructured.Unstructured, url string, d rootsync.Declared, tmp *rootsync.Temporary, keepRef bool, ann map[string]string) *unstructured.Unstructured {
	spec, _, _ := unstructured.NestedMap(live.Object, "spec")
	spec = maps.Clone(spec)
	spec["url"] = url
	switch {
	case keepRef:
	case d.Ref != nil:
		// The whole declared ref, as git declares it (a name, a tag, a
		// semver range, a commit), not only its branch.
		spec["ref"] = serve.RefMap(d.Ref)
	case tmp != nil && tmp.Branch != "":
		// git declares no ref and the temporary source set a branch:
		// source-controller's default again.
		delete(spec, "ref")
	}
	if d.Secret != "" {
		spec["secretRef"] = map[string]any{"name": d.Secret}
	} else {
		delete(spec, "secretRef")
	}
	o := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	o.SetGroupVersionKind(sourcev1.GroupVersion.WithKind(sourcev1.GitRepositoryKind))
	o.SetNamespace(live.GetNamespace())
	o.SetName(live.GetName())
	if len(ann) > 0 {
		o.SetAnnotations(ann)
	}
	return o
}

// ours returns the annotations of live that this tool manages.
func ours(live *unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	for k, v := range live.GetAnnotations() {
		if strings.HasPrefix(k, rootsync.AnnotationPrefix) || k == rootsync.ReconcileAnnotation {
			out[k] = v
		}
	}
	return out
}

// Run moves a GitRepository from its temporary source to the final one:
// switch (kustomize-controller still kept off it), wait for the final
// source's artifact, hand the object back to git (the annotations removed),
// and prove every Kustomization reading the source is Ready at the new
// revision. When the final source is not Ready in time it switches back to
// the temporary source and proves that is Ready again. Checks go to report.
func Run(ctx context.Context, cl *apply.Cluster, o Options, report *verify.Report) error {
	if o.Progress == nil {
		o.Progress = func(string) {}
	}
	c := &cutoverRun{cl: cl, o: o, report: report, id: fmt.Sprintf("GitRepository %s/%s", o.Namespace, o.Name)}
	if ok, err := c.source(ctx); err != nil || !ok {
		return err
	}
	if o.DryRun {
		report.Changed = true
		return nil
	}
	// 1. Switch, kustomize-controller still kept off the object.
	rev, ok, err := c.switchToFinal(ctx)
	if err != nil || !ok {
		return err
	}
	// 2. Hand back to git: our annotations and the reconcile switch go.
	if err := c.handBack(ctx); err != nil {
		return err
	}
	// 3. Every Kustomization reading the source is Ready at the new revision.
	report.Add(consumersReady(ctx, cl, o, rev))
	report.Facts["revision"] = rev
	return nil
}

// cutoverRun is one Cutover's state, shared by its steps: the object as
// found, its temporary and declared sources, and the final URL.
type cutoverRun struct {
	cl       *apply.Cluster
	o        Options
	report   *verify.Report
	id       string // "GitRepository ns/name", for the messages
	live     *unstructured.Unstructured
	tmp      *rootsync.Temporary
	declared rootsync.Declared
	final    string
	tmpRev   string // the temporary source's artifact revision, "" if none
	// token is the last reconcile request write sent: a wait for the
	// source holds only once source-controller handled it, so the artifact
	// is one fetched from the URL just written, not the one it had.
	token string
}

// source is the before-gate: the object is on a temporary source and the
// final URL is known. false (with the gate in the report) when there is
// nothing to do or it cannot be done.
func (c *cutoverRun) source(ctx context.Context) (bool, error) {
	o, id, report := c.o, c.id, c.report
	sc := GateCutoverSource.New()
	live, err := rootsync.LiveSource(ctx, c.cl.Client, o.Namespace, o.Name)
	if err != nil {
		return false, err
	}
	if live == nil {
		sc.Verdict, sc.Message = verify.Fail, id+" not found: run `bootstrap sync` first"
		report.Add(sc)
		return false, nil
	}
	liveURL, _, _ := unstructured.NestedString(live.Object, "spec", "url")
	tmp, declared := rootsync.TemporaryOf(live)
	if tmp == nil {
		if o.To == "" || o.To == liveURL {
			sc.Verdict = verify.Pass
			sc.Message = fmt.Sprintf("%s is not on a temporary source: it reads %s as git declares; nothing to cut over", id, liveURL)
			report.Add(sc)
			// A cutover whose hand-over failed (or an older one that made
			// none) left fields this tool owns: hand them over now.
			if owned := apply.OwnedBy(live, kube.FieldManager); len(owned) > 0 && !o.DryRun {
				hb := GateHandedBack.New()
				if _, err := apply.HandOver(ctx, c.cl.Client, []*unstructured.Unstructured{live}, nil); err != nil {
					hb.Verdict, hb.Message = verify.Fail, fmt.Sprintf("%s still has fields owned by %s (%s) and handing them to kustomize-controller failed: %v", id, kube.FieldManager, strings.Join(owned, ", "), err)
				} else {
					report.Changed = true
					hb.Verdict, hb.Message = verify.Pass, fmt.Sprintf("%s: the fields %s still owned (%s) are now kustomize-controller's", id, kube.FieldManager, strings.Join(owned, ", "))
				}
				report.Add(hb)
			}
			return false, nil
		}
		sc.Verdict = verify.Fail
		sc.Message = fmt.Sprintf("%s is not on a temporary source (no %s annotation) and reads %s: change its URL in git, not with cutover", id, rootsync.AnnSource, liveURL)
		report.Add(sc)
		return false, nil
	}
	final := o.To
	if final == "" {
		final = declared.URL
	}
	if final == "" {
		sc.Verdict = verify.Fail
		sc.Message = fmt.Sprintf("%s records no declared URL (%s): pass --to URL", id, rootsync.AnnDeclaredURL)
		report.Add(sc)
		return false, nil
	}
	var before sourcev1.GitRepository
	if err := c.cl.Client.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, &before); err != nil {
		return false, fmt.Errorf("read %s: %w", id, err)
	}
	c.live, c.tmp, c.declared, c.final = live, tmp, declared, final
	if before.Status.Artifact != nil {
		c.tmpRev = before.Status.Artifact.Revision
	}
	sc.Verdict = verify.Pass
	sc.Message = fmt.Sprintf("%s on the temporary source %s since %s (revision %s); final source %s", id, tmp.URL, tmp.Since.Format(time.RFC3339), revOrNone(c.tmpRev), final)
	sc.Evidence = []string{"temporary-url=" + tmp.URL, "declared-url=" + declared.URL, "declared-ref=" + serve.DescribeRef(declared.Ref)}
	report.Add(sc)
	report.Facts["temporarySource"] = tmp.URL
	report.Facts["finalSource"] = final
	if o.To != "" && declared.URL != "" && o.To != declared.URL {
		w := GateDeclaredURL.New()
		w.Verdict = verify.Warn
		w.Message = fmt.Sprintf("--to %s differs from the URL git declares (%s): once handed back, the root re-applies git's URL; commit --to to git", o.To, declared.URL)
		report.Add(w)
	}
	return true, nil
}

// write server-side applies obj and asks the source-controller to
// reconcile it now.
func (c *cutoverRun) write(ctx context.Context, obj *unstructured.Unstructured) error {
	if _, err := apply.Object(ctx, c.cl.Manager, obj); err != nil {
		return fmt.Errorf("server-side apply %s: %w", c.id, err)
	}
	token, err := rootsync.RequestReconcileToken(ctx, c.cl.Client, obj)
	c.token = token
	return err
}

// waitSource waits up to --timeout for the GitRepository to be Ready from
// url with an artifact, having handled the fetch write asked for: right
// after a URL change source-controller can report Ready at the new
// generation with the artifact it fetched from the old URL.
func (c *cutoverRun) waitSource(ctx context.Context, url string) (*sourcev1.GitRepository, error) {
	wctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	token := c.token
	return wait.For(wctx, c.cl.Client, &sourcev1.GitRepositoryList{}, c.o.Namespace, c.o.Name, func(g *sourcev1.GitRepository) (bool, string) {
		ok, desc := fluxobj.Ready(g)
		fetched := token == "" || g.Status.LastHandledReconcileAt == token
		if !fetched {
			desc += "; the fetch asked for is not handled yet"
		}
		return ok && fetched && g.Spec.URL == url && g.Status.Artifact != nil, desc
	})
}

// switchToFinal applies the final URL (our annotations kept) and waits for
// its artifact, whose revision it returns. When that fails it rolls back
// and returns false: the run ends there, its verdicts in the report.
func (c *cutoverRun) switchToFinal(ctx context.Context) (string, bool, error) {
	o, id, report, final := c.o, c.id, c.report, c.final
	o.Progress(fmt.Sprintf("switching %s to %s (timeout %s)", id, final, o.Timeout))
	switched := applyObject(c.live, final, c.declared, c.tmp, false, ours(c.live))
	report.Changed = true
	if err := c.write(ctx, switched); err != nil {
		return "", false, err
	}
	fr := GateFinalReady.New()
	gr, err := c.waitSource(ctx, final)
	if err != nil {
		fr.Verdict = verify.Fail
		fr.Message = fmt.Sprintf("the final source %s did not become Ready: %v; switched back to the temporary source %s", final, err, c.tmp.URL)
		report.Add(fr)
		rctx := ctx
		if ctx.Err() != nil {
			// Interrupted while waiting: leave the cluster as it was, not
			// half-switched. The rollback gets its own wait (--timeout);
			// a second signal stops the process at once.
			o.Progress("interrupted: rolling back to the temporary source first (up to --timeout; interrupt again to stop now)")
			rctx = kube.Detach(ctx)
		}
		report.Add(rollback(rctx, c.cl, o, c.live, c.tmp,
			func(obj *unstructured.Unstructured) error { return c.write(rctx, obj) },
			func(url string) (*sourcev1.GitRepository, error) { return c.waitSource(rctx, url) }))
		return "", false, nil
	}
	rev := gr.Status.Artifact.Revision
	fr.Verdict = verify.Pass
	fr.Message = fmt.Sprintf("%s Ready from %s, artifact %s", id, final, rev)
	report.Add(fr)
	rv := GateFinalRevision.New()
	switch {
	case rev == c.tmpRev:
		rv.Verdict, rv.Message = verify.Pass, "same revision as the temporary source: "+rev
	default:
		rv.Verdict = verify.Warn
		rv.Message = fmt.Sprintf("the final source is at %s, the temporary one was at %s: the cluster cannot prove which is newer (an artifact carries no history); check that the final source holds every commit of the temporary one", rev, c.tmpRev)
	}
	report.Add(rv)
	return rev, true, nil
}

// handBack applies the final URL without our annotations, so git controls
// the object again, proves none is left and deletes the temporary source's
// serve Secret.
func (c *cutoverRun) handBack(ctx context.Context) error {
	o, id := c.o, c.id
	o.Progress("handing " + id + " back to git")
	cur, err := rootsync.LiveSource(ctx, c.cl.Client, o.Namespace, o.Name)
	if err != nil || cur == nil {
		return fmt.Errorf("re-read %s: %v", id, err)
	}
	back := applyObject(cur, c.final, c.declared, c.tmp, true, nil)
	if err := c.write(ctx, back); err != nil {
		return err
	}
	hb, err := handBackGate(ctx, c.cl, back, id, c.final, c.tmp.Secret, func() (*unstructured.Unstructured, error) {
		return rootsync.LiveSource(ctx, c.cl.Client, o.Namespace, o.Name)
	})
	if err != nil {
		return err
	}
	c.report.Add(hb)
	return nil
}

// handBackGate is [handed-back] for back, the root's source as just applied
// with the final source and none of our annotations: the root applies it
// from git again, so what this apply wrote becomes kustomize-controller's,
// as after sync (apply.HandOver), and a field git drops later leaves the
// cluster too. Re-read (reread) to prove no annotation and no field of
// ours is left; then, switched and read by nothing, the temporary source's
// serve Secret goes either way.
func handBackGate(ctx context.Context, cl *apply.Cluster, back *unstructured.Unstructured, id, final, serveSecret string, reread func() (*unstructured.Unstructured, error)) (verify.Check, error) {
	_, hoErr := apply.HandOver(ctx, cl.Client, []*unstructured.Unstructured{back}, nil)
	hb := GateHandedBack.New()
	cur, err := reread()
	if err != nil || cur == nil {
		return hb, fmt.Errorf("re-read %s: %v", id, err)
	}
	var problems []string
	if left := ours(cur); len(left) > 0 {
		problems = append(problems, fmt.Sprintf("annotations left on %s: %v (another field manager owns them?)", id, left))
	}
	switch m := apply.OwnedBy(cur, kube.FieldManager); {
	case hoErr != nil:
		problems = append(problems, fmt.Sprintf("handing %s's fields to kustomize-controller failed: %v; run `bootstrap cutover` again to retry the hand-over", id, hoErr))
	case len(m) > 0:
		problems = append(problems, fmt.Sprintf("%s still has fields owned by %s (%s), which kustomize-controller would not remove when git does; run `bootstrap cutover` again to retry the hand-over", id, kube.FieldManager, strings.Join(m, ", ")))
	}
	if len(problems) > 0 {
		hb.Verdict, hb.Message = verify.Fail, strings.Join(problems, "; ")
	} else {
		hb.Verdict, hb.Message = verify.Pass, fmt.Sprintf("%s reads %s with no temporary-source annotations; kustomize-controller reconciles it from git again", id, final)
	}
	if msg, err := deleteServeSecret(ctx, cl.Client, back.GetNamespace(), serveSecret); err != nil {
		hb.Verdict, hb.Message = verify.Fail, hb.Message+"; but "+err.Error()
	} else if msg != "" {
		hb.Message += "; " + msg
	}
	return hb, nil
}

// rollback re-applies the object as sync left it (temporary source,
// annotations) and proves it Ready again.
func rollback(ctx context.Context, cl *apply.Cluster, o Options, live *unstructured.Unstructured, tmp *rootsync.Temporary,
	apply func(*unstructured.Unstructured) error, waitSource func(string) (*sourcev1.GitRepository, error)) verify.Check {
	rb := GateRollback.New()
	o.Progress("rolling back to " + tmp.URL)
	url, _, _ := unstructured.NestedString(live.Object, "spec", "url")
	secret, _, _ := unstructured.NestedString(live.Object, "spec", "secretRef", "name")
	back := applyObject(live, url, rootsync.Declared{Secret: secret}, nil, true, ours(live))
	if err := apply(back); err != nil {
		rb.Verdict, rb.Message = verify.Fail, "rollback failed: "+err.Error()
		return rb
	}
	gr, err := waitSource(url)
	if err != nil {
		rb.Verdict, rb.Message = verify.Fail, fmt.Sprintf("rolled back to %s but it is not Ready: %v", url, err)
		return rb
	}
	// The Kustomizations reading it are walked back to its revision, so
	// "as before" is proven, not assumed.
	rev := gr.Status.Artifact.Revision
	names, failed, facts, err := walkConsumers(ctx, cl, o, rev)
	switch {
	case err != nil:
		rb.Verdict, rb.Message = verify.Skip, fmt.Sprintf("rolled back to %s, Ready at %s, but the Kustomizations reading it could not be walked: %v", url, rev, err)
	case len(failed) > 0:
		rb.Verdict, rb.Message = verify.Fail, fmt.Sprintf("rolled back to %s, Ready at %s, but %d of %d Kustomization(s) are not Ready at it: %s", url, rev, len(failed), len(names), strings.Join(failed, "; "))
	default:
		rb.Verdict = verify.Pass
		rb.Message = fmt.Sprintf("GitRepository %s/%s is back on the temporary source %s, Ready at %s, and %d Kustomization(s) reading it are Ready at it; the cluster is as before", o.Namespace, o.Name, url, rev, len(names))
	}
	rb.Evidence = append(names, walkEvidence(facts)...)
	return rb
}

// consumersReady walks every Kustomization whose sourceRef is the
// GitRepository until each is Ready having applied the source's current
// revision (rev, the one the cutover proved, unless the source moved on).
func consumersReady(ctx context.Context, cl *apply.Cluster, o Options, rev string) verify.Check {
	c := GateConsumersReady.New()
	names, failed, facts, err := walkConsumers(ctx, cl, o, rev)
	if err != nil {
		c.Verdict, c.Message = verify.Skip, "walk the Kustomizations reading the source: "+err.Error()
		return c
	}
	rev = currentRevision(ctx, cl, o, rev)
	c.Evidence = append(names, walkEvidence(facts)...)
	if len(failed) > 0 {
		c.Verdict = verify.Fail
		c.Message = fmt.Sprintf("%d of %d Kustomization(s) not Ready at %s: %s", len(failed), len(names), rev, strings.Join(failed, "; "))
		return c
	}
	c.Verdict = verify.Pass
	c.Message = fmt.Sprintf("%d Kustomization(s) Ready at %s", len(names), rev)
	return c
}

// currentRevision is the GitRepository's artifact revision now, or rev
// when it cannot be read: the walk proves the source's current revision,
// which is rev unless a commit landed meanwhile.
func currentRevision(ctx context.Context, cl *apply.Cluster, o Options, rev string) string {
	var g sourcev1.GitRepository
	if err := cl.Client.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, &g); err != nil || g.Status.Artifact == nil {
		return rev
	}
	return g.Status.Artifact.Revision
}

// walkConsumers is the converge walk over the Kustomizations that read the
// GitRepository (in every namespace) and what they depend on: a
// dependent blocked on a dependency that has just applied the new revision
// is nudged at once instead of waiting for kustomize-controller's
// --requeue-dependency, level after level. It returns the nodes walked and
// a line for each that did not converge, and the walk's facts.
func walkConsumers(ctx context.Context, cl *apply.Cluster, o Options, rev string) (names, failed []string, facts map[string]string, err error) {
	co := converge.DefaultOptions()
	co.Namespace, co.Timeout = metav1.NamespaceAll, o.Timeout
	co.Select = func(k *kustomizev1.Kustomization) bool {
		return fluxobj.KustomizationSource(k) == fluxobj.Ref{Kind: o.kind(), Namespace: o.Namespace, Name: o.Name}
	}
	o.Progress(fmt.Sprintf("walking the Kustomizations that read %s %s/%s to %s (timeout %s)", o.kind(), o.Namespace, o.Name, rev, o.Timeout))
	checks, facts, err := converge.Walk(ctx, cl, co, o.Progress)
	if err != nil {
		return nil, nil, facts, err
	}
	prefix := converge.GateNode.ID + "/"
	for _, n := range checks {
		if id, ok := strings.CutPrefix(n.ID, prefix); ok {
			names = append(names, id)
		}
	}
	for _, n := range converge.Unconverged(checks) {
		if id, ok := strings.CutPrefix(n.ID, prefix); ok {
			failed = append(failed, fmt.Sprintf("Kustomization %s: %s", id, n.Message))
		} else {
			failed = append(failed, n.Message)
		}
	}
	return names, failed, facts, nil
}

// walkEvidence is what a walk's facts say about how it got there.
func walkEvidence(facts map[string]string) []string {
	var out []string
	for _, k := range []string{"converge.nudges", "converge.duration", "converge.critical-path"} {
		if v := facts[k]; v != "" {
			out = append(out, k+"="+v)
		}
	}
	return out
}

func revOrNone(rev string) string {
	if rev == "" {
		return "no artifact"
	}
	return rev
}

// NewPhase is `bootstrap cutover` as a pipeline phase.
func NewPhase(o Options, connect func() (*apply.Cluster, error)) *Phase {
	return &Phase{o: o, connect: connect}
}

// Phase moves a temporarily-sourced GitRepository to its final
// source. Its before-gate (the source is on a temporary source) and the
// switch are one step: the gate reads the live object the switch starts from.
type Phase struct {
	pipeline.Base // After: Do proves the outcome
	o             Options
	connect       func() (*apply.Cluster, error)
	cl            *apply.Cluster
}

// Name implements pipeline.Phase.
func (p *Phase) Name() string { return PhaseName }

// Gates implements pipeline.Phase.
func (p *Phase) Gates() []verify.Def {
	return []verify.Def{GateCutoverSource, GateDeclaredURL, GateFinalReady, GateFinalRevision, GateRollback, GateHandedBack, GateConsumersReady}
}

// Before connects to the cluster.
func (p *Phase) Before(context.Context, *pipeline.Run) ([]verify.Check, error) {
	var err error
	p.cl, err = p.connect()
	return nil, err
}

// Do checks the source and, unless a dry run, cuts over (rolling back when
// the final source does not become Ready).
func (p *Phase) Do(ctx context.Context, run *pipeline.Run) error {
	o := p.o
	o.DryRun, o.Progress = run.DryRun, run.Progress
	return Run(ctx, p.cl, o, run.Report)
}

// deleteServeSecret deletes the temporary source's credentials Secret once
// nothing reads it, when --serve made it (labelled so); a Secret the
// operator named with --source-secret is theirs and stays.
func deleteServeSecret(ctx context.Context, c client.Client, ns, name string) (string, error) {
	if name == "" {
		return "", nil
	}
	var sec corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &sec); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("read the temporary Secret %s/%s: %w", ns, name, err)
	}
	if sec.Labels[serve.SecretLabel] == "" {
		return "", nil
	}
	if err := c.Delete(ctx, &sec); err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("delete the temporary Secret %s/%s: %w (delete it by hand)", ns, name, err)
	}
	return fmt.Sprintf("the temporary source's Secret %s/%s deleted", ns, name), nil
}

// Validate checks cutover's flags before the cluster is contacted,
// the same under --dry-run as for the real run.
func Validate(o Options) error {
	errs := []error{
		input.ValidNamespace("--namespace", o.Namespace),
		input.ValidName("--source", o.Name, "GitRepository"),
	}
	if o.To != "" {
		errs = append(errs, input.ValidGitURL("--to", o.To))
	}
	return errors.Join(errs...)
}
