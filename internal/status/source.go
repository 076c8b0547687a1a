// Package status is `bootstrap status`: every phase's after-gates, read
// only, against the live cluster. It builds no readiness rule of its own:
// the controllers, age-key and converge phases contribute their read-only
// variants (controllers.StatusPhase, agekey.VerifyPhase,
// converge.StatusPhase); this package adds the sync phase's view of the
// root's source (temporary or declared, Ready, revision) from the same
// annotations and predicates step 3 and converge use, the read-only
// proof (status.read-only), and --watch's loop (Loop, Watch). flow.Status
// lists the phases in their order.
package status

import (
	"context"
	"fmt"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/internal/converge"
	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/internal/rootsync"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// The sync phase's gates as status reports them: the root's source, read.
var (
	GateTemporary    = rootsync.GateTemporary.At(verify.After)
	GateSourceReady  = rootsync.GateSourceReady
	GateDecryption   = rootsync.GateDecryption.At(verify.After)
	GatePrerequisite = rootsync.GatePrerequisite.At(verify.After)
)

// SourceOptions locate the root and, with a repository, what git declares.
type SourceOptions struct {
	// Root is the root Kustomization.
	Root converge.NodeID
	// Render is the environment built from the repository (nil: the
	// cluster alone).
	Render *rootsync.Render
}

// SourcePhase is step 3's after-gates on the live cluster: the root
// Kustomization's source is the one git declares (a source still on the
// temporary override of a cold bring-up fails, naming it), Ready with an
// artifact at a revision; with a repository, every decryption Secret the
// environment names exists. Reads only.
type SourcePhase struct {
	pipeline.Base // Do: nothing is changed
	o             SourceOptions
	connect       func() (*apply.Cluster, error)
	cl            *apply.Cluster
}

var _ pipeline.Phase = (*SourcePhase)(nil)

// NewSourcePhase is the read-only sync phase.
func NewSourcePhase(o SourceOptions, connect func() (*apply.Cluster, error)) *SourcePhase {
	return &SourcePhase{o: o, connect: connect}
}

// Name is "sync".
func (p *SourcePhase) Name() string { return rootsync.PhaseName }

// Gates implements pipeline.Phase.
func (p *SourcePhase) Gates() []verify.Def {
	gs := []verify.Def{GateTemporary, GateSourceReady}
	if p.o.Render != nil {
		gs = append(gs, GateDecryption, GatePrerequisite)
	}
	return gs
}

// Before connects.
func (p *SourcePhase) Before(context.Context, *pipeline.Run) ([]verify.Check, error) {
	cl, err := p.connect()
	p.cl = cl
	return nil, err
}

// After reads the root, its source and (with a repository) the decryption
// Secrets.
func (p *SourcePhase) After(ctx context.Context, run *pipeline.Run) []verify.Check {
	out := p.source(ctx, run)
	if p.o.Render != nil {
		live := rootsync.DecryptionSecrets(ctx, p.cl.Client, p.o.Render)
		live = append(live, rootsync.Prerequisites(ctx, p.cl.Client, p.o.Render)...)
		for _, c := range live {
			c.Stage = verify.After
			out = append(out, c)
		}
	}
	return out
}

func (p *SourcePhase) source(ctx context.Context, run *pipeline.Run) []verify.Check {
	root := p.o.Root
	var k kustomizev1.Kustomization
	err := p.cl.Client.Get(ctx, client.ObjectKey{Namespace: root.Namespace, Name: root.Name}, &k)
	switch {
	case apimeta.IsNoMatchError(err):
		why := "Flux is not installed (the Kustomization API is not served): run `bootstrap up`"
		return []verify.Check{GateTemporary.Fail(why), GateSourceReady.Fail(why)}
	case apierrors.IsNotFound(err):
		why := fmt.Sprintf("the root Kustomization %s does not exist: run `bootstrap sync --env ENV` (or pass --root)", root)
		return []verify.Check{GateTemporary.Fail(why), GateSourceReady.Fail(why)}
	case err != nil:
		why := fmt.Sprintf("could not read the root Kustomization %s: %v", root, err)
		return []verify.Check{GateTemporary.Skip(why), GateSourceReady.Skip(why)}
	}
	ref := fluxobj.KustomizationSource(&k)
	ns := ref.Namespace
	srcID := fmt.Sprintf("%s %s/%s", ref.Kind, ns, ref.Name)
	if ref.Kind != sourcev1.GitRepositoryKind {
		// Only a GitRepository can be on a temporary source; readiness is
		// converge's node gate for the root.
		return []verify.Check{GateTemporary.Passf("the root %s reads %s: not a GitRepository, so never on a temporary source", root, srcID)}
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(sourcev1.GroupVersion.WithKind(sourcev1.GitRepositoryKind))
	err = p.cl.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, live)
	switch {
	case apierrors.IsNotFound(err):
		why := fmt.Sprintf("the root %s reads %s, which does not exist: re-run `bootstrap sync`", root, srcID)
		return []verify.Check{GateTemporary.Fail(why), GateSourceReady.Fail(why)}
	case err != nil:
		why := fmt.Sprintf("could not read %s: %v", srcID, err)
		return []verify.Check{GateTemporary.Skip(why), GateSourceReady.Skip(why)}
	}
	url, _, _ := unstructured.NestedString(live.Object, "spec", "url")
	run.Report.Facts["sourceURL"] = url
	tc := GateTemporary.New()
	tmp, declared := rootsync.TemporaryOf(live)
	if p.o.Render != nil && p.o.Render.Source != nil {
		declared = rootsync.DeclaredOf(p.o.Render.Source)
	}
	switch {
	case tmp != nil:
		tc.Verdict = verify.Fail
		tc.Message = fmt.Sprintf("%s is still on the temporary source %s (since %s; git declares %s): kustomize-controller leaves it alone, so a push to the declared repository never reaches this cluster; run `bootstrap cutover` once %s is reachable",
			srcID, tmp.URL, tmp.Since.UTC().Format(time.RFC3339), orNone(declared.URL), orNone(declared.URL))
		tc.Evidence = []string{"annotation " + rootsync.AnnSource + "=" + rootsync.SourceTemporary, "spec.url=" + url}
		run.Report.Facts["temporarySource"] = tmp.URL
	case p.o.Render != nil && declared.URL != "" && url != declared.URL:
		tc.Verdict = verify.Warn
		tc.Message = fmt.Sprintf("%s fetches %s, but git (%s) declares %s, and no temporary source is recorded: someone changed it by hand; the root's next reconcile puts git's back", srcID, url, p.o.Render.Options.Path, declared.URL)
	default:
		tc.Verdict = verify.Pass
		tc.Message = fmt.Sprintf("%s fetches its declared url %s (no temporary source)", srcID, url)
	}
	var gr sourcev1.GitRepository
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(live.Object, &gr); err != nil {
		return []verify.Check{tc, GateSourceReady.Skipf("could not read %s: %v", srcID, err)}
	}
	// The same reading of a source that converge's predicate makes.
	s := converge.SourceOf(ref, &gr)
	sc := GateSourceReady.New()
	sc.Evidence = []string{"spec.url=" + url, s.Desc}
	if s.Ready && s.Revision != "" {
		sc.Verdict = verify.Pass
		sc.Message = fmt.Sprintf("%s Ready, artifact %s from %s", srcID, s.Revision, url)
		run.Report.Facts["sourceRevision"] = s.Revision
	} else {
		sc.Verdict = verify.Fail
		sc.Message = fmt.Sprintf("%s is not Ready with an artifact: %s; look at source-controller's log and the source's events", srcID, s.Desc)
	}
	return []verify.Check{tc, sc}
}

func orNone(s string) string {
	if s == "" {
		return "(none recorded)"
	}
	return s
}
