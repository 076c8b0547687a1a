package rootsync

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/ssa"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/internal/converge"
	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/internal/serve"
	"github.com/homelab-ops/bootstrap/internal/wait"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// RunOptions drive the sync phase.
type RunOptions struct {
	// Build selects the environment to build.
	Build   Options
	Timeout time.Duration
	// Source, when non-nil, is the temporary source to use (--source-url).
	Source *Temporary
	// Serve, when non-nil, is the temporary source this machine serves
	// (--serve): started just before the apply, its credentials Secret
	// applied with the root.
	Serve *serve.Prepared
	// Now stamps a new temporary source; time.Now when nil.
	Now func() time.Time
	// Built, when set, is Build's result made earlier (a command that
	// refuses bad input before its first request builds first).
	Built *Render
}

// NewPhase is step 3 as a pipeline phase: build the environment's root and
// gate it offline, then the cluster's before-gates (decryption Secrets, the
// temporary source), the plan and the server-side apply, and the proof that
// the source and the root reconciled at the artifact's revision.
func NewPhase(o RunOptions, connect func() (*apply.Cluster, error)) *SyncPhase {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &SyncPhase{o: o, connect: connect}
}

// SyncPhase is step 3.
type SyncPhase struct {
	o       RunOptions
	connect func() (*apply.Cluster, error)

	// Render is the built root, once Before ran.
	Render *Render
	cl     *apply.Cluster
	tmp    *Temporary
	// operator names the FluxInstance that creates a declared root here:
	// sync applies nothing and proves what the operator made.
	operator string
	// planned is set on a dry run over a cluster without Flux whose
	// controllers phase of this run planned Flux's CRDs (plan.go).
	planned *plannedFlux
}

// Name implements pipeline.Phase.
func (p *SyncPhase) Name() string { return PhaseName }

// Gates implements pipeline.Phase.
func (p *SyncPhase) Gates() []verify.Def {
	return []verify.Def{GateRoot, GateRootWait, GateSource, GateDependsOn, GatePlanned, GateOperator, GateDecryption, GatePrerequisite, GateExternal, GateTemporary,
		GateApplied, GateSourceReady, GateRootApplied, GateTemporaryKept}
}

// Cluster is the connection the phase made (nil before its cluster gates).
func (p *SyncPhase) Cluster() *apply.Cluster { return p.cl }

// Before builds and gates the root offline, then checks the cluster: the
// decryption Secrets exist, and which source the GitRepository will use.
func (p *SyncPhase) Before(ctx context.Context, run *pipeline.Run) ([]verify.Check, error) {
	report := run.Report
	report.Facts["path"] = p.o.Build.Path
	r, err := p.o.Built, error(nil)
	if r == nil {
		if r, err = Build(p.o.Build); err != nil {
			return nil, err
		}
	}
	p.Render = r
	if r.Declared != nil && p.o.Source != nil && p.o.Source.Branch != "" {
		// Nothing in git re-creates a declared source: the cutover would
		// keep the temporary branch in place of the declared ref.
		return nil, verify.InputErrorf("--source-branch %s: the root's source is declared by the FluxInstance spec.sync at %s (ref %s), which nothing in git applies again after the cutover; drop --source-branch (the temporary source serves the declared ref)",
			p.o.Source.Branch, r.Declared.Location, r.Declared.Sync.Ref)
	}
	checks := Static(r)
	if verify.Blocks(checks...) {
		return checks, nil
	}
	if err := ociRefuseTemporary(r, p.o); err != nil {
		return checks, err
	}
	if p.cl, err = p.connect(); err != nil {
		return checks, err
	}
	cl := p.cl
	p.operator = ""
	if p.planned = planFlux(run, cl.Client, r); p.planned != nil {
		c := p.planned.check(ctx, r)
		checks = append(checks, c)
		if verify.Blocks(c) {
			return checks, nil
		}
	}
	if r.Declared != nil && r.Declared.Layout == fluxrepo.LayoutFluxInstance {
		c, instance := operatorGate(ctx, cl.Client, r, p.o.Serve != nil || p.o.Source != nil)
		checks = append(checks, c)
		if verify.Blocks(c) {
			return checks, nil
		}
		p.operator = instance
	}
	checks = append(checks, planned(run, cl.Client, func(c client.Client) []verify.Check { return DecryptionSecrets(ctx, c, r) })...)
	checks = append(checks, planned(run, cl.Client, func(c client.Client) []verify.Check { return Prerequisites(ctx, c, r) })...)
	checks = append(checks, planned(run, cl.Client, func(c client.Client) []verify.Check { return []verify.Check{ExternalArtifactGate(ctx, c, r)} })...)
	if p.operator != "" {
		return append(checks, GateTemporary.Pass(fmt.Sprintf("the source the Flux Operator makes from spec.sync, url %s", DeclaredOf(r.Source).URL))), nil
	}

	if IsOCIRoot(r) {
		if p.o.Serve != nil {
			c, err := p.ociServed(r, report)
			return append(checks, c), err
		}
		c, err := ociSourceGate(r)
		return append(checks, c), err
	}
	return p.gitSource(ctx, report, r, checks)
}

// gitSource is the Git root's source gate (appended to checks): the
// temporary source asked for (--serve, --source-url), or one already in
// place and kept, or git's declared url.
func (p *SyncPhase) gitSource(ctx context.Context, report *verify.Report, r *Render, checks []verify.Check) ([]verify.Check, error) {
	var err error
	src := r.Source
	var live *unstructured.Unstructured
	if p.planned == nil { // without Flux there is no live source
		if live, err = LiveSource(ctx, p.cl.Client, src.GetNamespace(), src.GetName()); err != nil {
			return checks, err
		}
	}
	var liveTmp *Temporary
	if live != nil {
		liveTmp, _ = TemporaryOf(live)
	}
	tc := GateTemporary.New()
	srcID := fmt.Sprintf("GitRepository %s/%s", src.GetNamespace(), src.GetName())
	declared := DeclaredOf(src)
	var tmp *Temporary
	switch {
	case p.o.Serve != nil:
		sv := p.o.Serve
		tmp = &Temporary{URL: sv.URL, Secret: sv.SecretName(), Since: p.o.Now()}
		tc.Verdict = verify.Pass
		tc.Message = fmt.Sprintf("%s on the temporary source this machine serves at %s (%s; git declares %s); kustomize-controller leaves it alone until `bootstrap cutover`", srcID, sv.URL, sv.Origin(), declared.URL)
		if liveTmp != nil {
			tc.Message += fmt.Sprintf("; replaces the temporary source %s set %s", liveTmp.URL, liveTmp.Since.Format(time.RFC3339))
		}
		report.Facts["serveRevision"] = sv.Snapshot.Revision()
		report.Facts["serveOrigin"] = sv.Origin()
	case p.o.Source != nil:
		tmp = &Temporary{URL: p.o.Source.URL, Branch: p.o.Source.Branch, Secret: p.o.Source.Secret, Since: p.o.Now()}
		if liveTmp.Same(tmp) && !liveTmp.Since.IsZero() {
			tmp.Since = liveTmp.Since
		}
		tc.Verdict = verify.Pass
		tc.Message = fmt.Sprintf("%s on the temporary source %s (git declares %s); kustomize-controller leaves it alone until `bootstrap cutover`", srcID, tmp.URL, declared.URL)
		if liveTmp != nil && !liveTmp.Same(tmp) {
			tc.Message += fmt.Sprintf("; replaces the temporary source %s set %s", liveTmp.URL, liveTmp.Since.Format(time.RFC3339))
		}
	case liveTmp != nil:
		tmp = liveTmp
		tc.Verdict = verify.Warn
		tc.Message = fmt.Sprintf("%s is on the temporary source %s since %s: kept (git declares %s); run `bootstrap cutover` to move to the final source, or pass --source-url to change it",
			srcID, tmp.URL, tmp.Since.Format(time.RFC3339), declared.URL)
		report.Warn(tc.Message)
	default:
		tc.Verdict = verify.Pass
		tc.Message = fmt.Sprintf("%s from git's declared url %s", srcID, declared.URL)
	}
	checks = append(checks, tc)
	if tmp != nil {
		if err := Override(src, tmp); err != nil {
			return checks, err
		}
		report.Facts["temporarySource"] = tmp.URL
		report.Facts["temporarySince"] = tmp.Since.UTC().Format(time.RFC3339)
	}
	report.Facts["declaredURL"] = declared.URL
	p.tmp = tmp
	return checks, nil
}

// Do plans and, unless a dry run, applies the root.
func (p *SyncPhase) Do(ctx context.Context, run *pipeline.Run) error {
	r := p.Render
	if p.operator != "" {
		run.Report.Add(GateApplied.Pass(fmt.Sprintf("nothing applied: FluxInstance %s makes the root %s/%s and its source, which apply %s", p.operator, r.Root.Namespace, r.Root.Name, r.Options.Path)))
		return nil
	}
	seeds, supplied, notes := r.Inputs.objects()
	first := slices.Concat(seeds, supplied)
	objs, plan, err := p.plan(ctx, run, first, notes)
	if err != nil || run.DryRun {
		return err
	}
	sv := p.o.Serve
	var done []verify.ObjectChange
	if len(first) > 0 {
		objs, done, err = p.applyFirst(ctx, run, seeds, supplied, objs, plan)
		run.Report.Changed = run.Report.Changed || apply.Changed(done)
		if err != nil {
			run.Report.Add(GateApplied.Fail(err.Error()))
			return nil
		}
	}
	if sv != nil {
		if sv.Replaces != nil {
			run.Progressf("stopping the temporary source this machine served before (pid %d, %s)", sv.Replaces.PID, sv.Replaces.URL)
		}
		st, err := sv.Start(ctx)
		if err != nil {
			return err
		}
		run.Report.Changed = true
		run.Progressf("serving %s at %s (pid %d, until %s; log %s)", st.Revision, st.URL, st.PID, st.Until.Format(time.RFC3339), st.Log)
		run.Report.Facts["servePID"] = fmt.Sprint(st.PID)
		run.Report.Facts["serveURL"] = st.URL
		run.Report.Facts["serveUntil"] = st.Until.Format(time.RFC3339)
		run.Report.Facts["serveLog"] = st.Log
	}
	applied, err := apply.Apply(ctx, p.cl, objs, plan, p.o.Timeout)
	applied = append(done, applied...)
	run.Report.Changed = run.Report.Changed || apply.Changed(applied)
	if err != nil {
		if sv != nil {
			// Nothing reads the new source: it stops with the failed sync.
			sv.Abort()
			run.Progressf("stopped the temporary source: the sync did not apply")
		}
		run.Report.Add(GateApplied.Fail(err.Error()))
		return nil
	}
	// What this apply wrote, kustomize-controller owns from now on (see
	// apply.HandOver): the root's next revision removes what Git removed.
	changed := map[string]bool{}
	for _, a := range applied {
		if a.Action == ssa.CreatedAction || a.Action == ssa.ConfiguredAction {
			changed[a.Object] = true
		}
	}
	var handed []*unstructured.Unstructured
	for _, o := range r.Objects {
		if changed[apply.ID(o)] && notes[apply.ID(o)] == "" {
			handed = append(handed, o)
		}
	}
	n, err := apply.HandOver(ctx, p.cl.Client, handed, func(live *unstructured.Unstructured) bool {
		return live.GetAnnotations()[ReconcileAnnotation] == ReconcileDisabled
	})
	if err != nil {
		run.Report.Add(GateApplied.Fail(fmt.Sprintf("%d object(s) applied from %s, but %v: fields removed from Git later would stay in the cluster; re-run the sync", len(applied), r.Options.Path, err)))
		return nil
	}
	msg := fmt.Sprintf("%d object(s) server-side applied from %s", len(applied), r.Options.Path)
	if len(first) > 0 {
		msg += fmt.Sprintf(", after %d seeded and %d supplied (kustomize-controller's field manager for the seeds)", len(seeds), len(supplied))
	}
	if n > 0 {
		msg += fmt.Sprintf("; the fields of %d written now handed to kustomize-controller's field manager, as it takes kubectl's", n)
	}
	run.Report.Add(GateApplied.Pass(msg))
	return nil
}

// plan plans first (the seeds and the supplied objects, with their notes)
// and the root's other objects (with --serve's Secret), and returns the
// latter and the plan: the seeds and the supplied objects go first, in
// place of the repository's own (a seed is the root's object decrypted).
func (p *SyncPhase) plan(ctx context.Context, run *pipeline.Run, first []*unstructured.Unstructured, notes map[string]string) ([]*unstructured.Unstructured, []verify.ObjectChange, error) {
	objs := slices.DeleteFunc(slices.Clone(p.Render.Objects), func(o *unstructured.Unstructured) bool { return notes[apply.ID(o)] != "" })
	if sv := p.o.Serve; sv != nil {
		sec, err := sv.Secret()
		if err != nil {
			return nil, nil, err
		}
		objs = append(objs, sec)
	}
	var plan []verify.ObjectChange
	var err error
	if p.planned != nil {
		plan, err = p.planned.plan(ctx, p.cl, slices.Concat(first, objs))
	} else {
		plan, err = apply.Plan(ctx, p.cl, slices.Concat(first, objs), apply.PlanOptions{})
	}
	if err != nil {
		return nil, nil, err
	}
	for i := range plan {
		plan[i].Note = notes[plan[i].Object]
	}
	run.Planned(plan)
	return objs, plan, nil
}

// applyFirst applies the namespaces the seeds and the supplied objects go
// into (when the sync creates them), then the seeds as kustomize-controller
// (apply.ApplyAsKustomizeController: the root adopts them) and the
// supplied objects with this tool's field manager, before anything else.
// It returns the objects left to apply.
func (p *SyncPhase) applyFirst(ctx context.Context, run *pipeline.Run, seeds, supplied, objs []*unstructured.Unstructured, plan []verify.ObjectChange) ([]*unstructured.Unstructured, []verify.ObjectChange, error) {
	nss := map[string]bool{}
	for _, o := range slices.Concat(seeds, supplied) {
		nss[o.GetNamespace()] = true
	}
	var namespaces, rest []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "Namespace" && o.GetAPIVersion() == "v1" && nss[o.GetName()] {
			namespaces = append(namespaces, o)
		} else {
			rest = append(rest, o)
		}
	}
	var done []verify.ObjectChange
	if len(namespaces) > 0 {
		d, err := apply.Apply(ctx, p.cl, namespaces, plan, p.o.Timeout)
		done = append(done, d...)
		if err != nil {
			return nil, done, err
		}
	}
	run.Progressf("seeding %d object(s) for the root's first reconcile, applying %d supplied", len(seeds), len(supplied))
	if len(seeds) > 0 {
		d, err := apply.ApplyAsKustomizeController(ctx, p.cl.Client, seeds)
		done = append(done, d...)
		if err != nil {
			return nil, done, fmt.Errorf("seeding before the root: %w", err)
		}
	}
	if len(supplied) > 0 {
		d, err := apply.Apply(ctx, p.cl, supplied, plan, p.o.Timeout)
		done = append(done, d...)
		if err != nil {
			return nil, done, fmt.Errorf("applying the supplied objects: %w", err)
		}
	}
	return rest, done, nil
}

// After proves the source and the root reconciled.
func (p *SyncPhase) After(ctx context.Context, run *pipeline.Run) []verify.Check {
	return After(ctx, p.cl, p.Render, p.tmp, p.o.Timeout, run.Progress, p.o.Serve)
}

// sourceReady is sync.source-ready's condition on the GitRepository: Ready
// with an artifact, from wantURL, having handled the fetch asked for (token,
// "" when none was), and with servedRev (--serve; "" otherwise) at that
// served commit.
func sourceReady(g *sourcev1.GitRepository, token, wantURL, servedRev string) (bool, string) {
	ok, desc := fluxobj.Ready(g)
	fetched := token == "" || g.Status.LastHandledReconcileAt == token
	if !fetched {
		desc += "; the fetch asked for is not handled yet"
	}
	served := true
	if servedRev != "" && g.Status.Artifact != nil && g.Status.Artifact.Revision != servedRev {
		served = false
		desc += fmt.Sprintf("; artifact %s, not the served %s", g.Status.Artifact.Revision, servedRev)
	}
	return ok && fetched && served && g.Status.Artifact != nil && g.Spec.URL == wantURL, desc
}

// After proves the sync: the GitRepository is Ready with an artifact (at
// the temporary URL when there is one), and the root Kustomization is Ready
// with lastAppliedRevision equal to that artifact's revision.
//
// With sv (--serve) the artifact must be the served commit, and a source
// that does not become Ready says what to check.
func After(ctx context.Context, cl *apply.Cluster, r *Render, tmp *Temporary, timeout time.Duration, progress apply.Progress, sv *serve.Prepared) []verify.Check {
	if IsOCIRoot(r) {
		servedRev := ""
		if sv != nil {
			servedRev = sv.Snapshot.Revision()
		}
		return afterOCI(ctx, cl, r, timeout, progress, servedRev)
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	src := r.Source
	sc := GateSourceReady.New()
	wantURL := DeclaredOf(src).URL
	progress(fmt.Sprintf("waiting for GitRepository %s/%s to be Ready with an artifact from %s (timeout %s)", src.GetNamespace(), src.GetName(), wantURL, timeout))
	// The source fetches now (as `flux reconcile source git` does), so the
	// sync is proven at the repository's current commit, not at whatever
	// the source last fetched.
	token, err := RequestReconcileToken(wctx, cl.Client, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: src.GetNamespace(), Name: src.GetName()}})
	if err != nil {
		progress("could not ask the source to fetch now (" + err.Error() + "); waiting for its own interval")
	}
	servedRev := ""
	if sv != nil {
		servedRev = sv.Snapshot.Revision()
	}
	gr, err := wait.For(wctx, cl.Client, &sourcev1.GitRepositoryList{}, src.GetNamespace(), src.GetName(), func(g *sourcev1.GitRepository) (bool, string) {
		return sourceReady(g, token, wantURL, servedRev)
	})
	rc := GateRootApplied.New()
	if err != nil {
		sc.Verdict, sc.Message = verify.Fail, fmt.Sprintf("GitRepository %s", err)
		if sv != nil && sv.Started != nil {
			sc.Message += fmt.Sprintf("; source-controller must reach %s from inside the cluster: check the firewall between the nodes and this machine (port %s), or pass --serve-url with an address the nodes reach; the temporary source keeps serving (pid %d, `bootstrap serve stop` ends it)",
				sv.URL, portOf(sv.Started.Listen), sv.Started.PID)
		}
		rc.Verdict, rc.Message = verify.Skip, "no artifact to compare with"
		return []verify.Check{sc, rc}
	}
	rev := gr.Status.Artifact.Revision
	sc.Verdict = verify.Pass
	sc.Message = fmt.Sprintf("GitRepository %s/%s Ready, artifact %s from %s", gr.Namespace, gr.Name, rev, gr.Spec.URL)
	sc.Evidence = []string{"status.artifact.revision=" + rev, "spec.url=" + gr.Spec.URL}
	root := r.Root
	progress(fmt.Sprintf("waiting for Kustomization %s/%s to apply %s", root.Namespace, root.Name, rev))
	// The one walk (converge's, with its nudges and budgets) over the root
	// alone: converged is Ready at its generation having applied the
	// source's current artifact, the one just proven.
	id := converge.NodeID{Namespace: root.Namespace, Name: root.Name}
	co := converge.DefaultOptions()
	co.Namespace, co.Timeout = root.Namespace, timeout
	co.Select = func(k *kustomizev1.Kustomization) bool { return k.Namespace == id.Namespace && k.Name == id.Name }
	checks, _, err := converge.Walk(wctx, cl, co, progress)
	if err == nil {
		if bad := converge.Unconverged(checks); len(bad) > 0 {
			err = errors.New(bad[0].Message)
		}
	}
	var k kustomizev1.Kustomization
	if err == nil {
		err = cl.Client.Get(wctx, client.ObjectKey{Namespace: root.Namespace, Name: root.Name}, &k)
	}
	if err != nil {
		rc.Verdict, rc.Message = verify.Fail, fmt.Sprintf("Kustomization %s/%s: %v (want lastAppliedRevision %s)", root.Namespace, root.Name, err, rev)
		return []verify.Check{sc, rc}
	}
	rc.Verdict = verify.Pass
	rc.Message = fmt.Sprintf("Kustomization %s/%s Ready, lastAppliedRevision %s", k.Namespace, k.Name, k.Status.LastAppliedRevision)
	rc.Evidence = []string{"status.lastAppliedRevision=" + k.Status.LastAppliedRevision}
	out := []verify.Check{sc, rc}
	if tmp != nil {
		// The root has now applied git's GitRepository: the override must
		// have survived it.
		tc := GateTemporaryKept.New()
		live, err := LiveSource(ctx, cl.Client, src.GetNamespace(), src.GetName())
		url := ""
		if live != nil {
			url, _, _ = unstructured.NestedString(live.Object, "spec", "url")
		}
		switch {
		case err != nil:
			tc.Verdict, tc.Message = verify.Skip, err.Error()
		case live != nil && url == tmp.URL && live.GetAnnotations()[ReconcileAnnotation] == ReconcileDisabled:
			tc.Verdict = verify.Pass
			tc.Message = fmt.Sprintf("spec.url is still %s after the root applied %s", url, rev)
		default:
			tc.Verdict = verify.Fail
			tc.Message = fmt.Sprintf("spec.url is %q after the root applied %s, not the temporary %s: the override was undone", url, rev, tmp.URL)
		}
		out = append(out, tc)
	}
	return out
}

func portOf(hostport string) string {
	_, p, _ := net.SplitHostPort(hostport)
	return p
}
