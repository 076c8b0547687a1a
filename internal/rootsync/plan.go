package rootsync

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/fluxcd/pkg/ssa"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/internal/crdschema"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// GatePlanned is sync.planned: on a dry run over a cluster that does not
// serve Flux's APIs yet, the root's objects of those APIs are validated
// offline against the CRDs the controllers phase of the same run would
// install (its render), as the API server validates a create, and planned
// as created. A valid root warns ("planned: …": no server-side dry run
// could judge it); an invalid object fails, as its apply would.
var GatePlanned = verify.Def{ID: "sync.planned", Phase: PhaseName, Stage: verify.Before,
	Title: "the root's objects are valid against the CRDs this run installs (dry run on a cluster without Flux)"}

// crdGK is the CustomResourceDefinition kind the controllers phase stages.
var crdGK = schema.GroupKind{Group: apiextensionsv1.GroupName, Kind: "CustomResourceDefinition"}

// plannedFlux is the dry run's view of a cluster without Flux whose
// controllers phase of this run planned Flux's CRDs: which of the root's
// kinds the API server does not serve yet, and the validator of the CRDs
// that will serve them.
type plannedFlux struct {
	run *pipeline.Run
	// unserved are the root's objects of kinds the API server does not
	// serve (yet).
	unserved map[*unstructured.Unstructured]bool
}

// planFlux is nil unless this is a dry run, the cluster does not serve the
// root source's API, and a phase before this one staged CRDs (the
// controllers phase of up). Then only "not installed yet" stands in the
// way, and the sync is planned against the render instead of refused.
func planFlux(run *pipeline.Run, cl client.Client, r *Render) *plannedFlux {
	if !run.DryRun || r.Source == nil || len(run.StagedOf(crdGK)) == 0 || served(cl, r.Source) {
		return nil
	}
	pf := &plannedFlux{run: run, unserved: map[*unstructured.Unstructured]bool{}}
	for _, o := range r.Objects {
		if !served(cl, o) {
			pf.unserved[o] = true
		}
	}
	return pf
}

// served says the API server serves o's kind at o's version.
func served(cl client.Client, o *unstructured.Unstructured) bool {
	gvk := o.GroupVersionKind()
	_, err := cl.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	return !meta.IsNoMatchError(err)
}

// check is sync.planned: every object of a kind not served yet is
// validated against the staged CRDs (crdschema: apiextensions-apiserver's
// own validation of a create).
func (pf *plannedFlux) check(ctx context.Context, r *Render) verify.Check {
	c := GatePlanned.New()
	v, err := crdschema.FromObjects(pf.run.StagedOf(crdGK), "the CRDs phase controllers installs")
	if err != nil {
		c.Verdict, c.Message = verify.Skip, fmt.Sprintf("the root's objects could not be validated offline: %v", err)
		return c
	}
	var bad, kinds []string
	n := 0
	for _, o := range r.Objects {
		if !pf.unserved[o] {
			continue
		}
		n++
		k := o.GetAPIVersion() + " " + o.GetKind()
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
		where := r.where(o.GetKind(), o.GetNamespace(), o.GetName())
		res := v.Validate(ctx, o)
		switch {
		case !res.Known:
			bad = append(bad, fmt.Sprintf("%s (%s): the API server does not serve %s, and no CRD phase controllers installs defines it: install its CRD first", apply.ID(o), where, o.GetAPIVersion()))
		case len(res.Errors) > 0:
			bad = append(bad, fmt.Sprintf("%s (%s) is invalid: %s", apply.ID(o), where, res.Summary()))
		case len(res.Dropped) > 0:
			c.Evidence = append(c.Evidence, fmt.Sprintf("%s: the API server prunes the unknown field(s) %s", apply.ID(o), strings.Join(res.Dropped, ", ")))
		}
	}
	if len(bad) > 0 {
		c.Verdict = verify.Fail
		c.Message = fmt.Sprintf("%s (validated offline against %s, as the API server validates a create); fix the object(s): the sync would fail to apply them", bad[0], v.Origin)
		if len(bad) > 1 {
			c.Message = fmt.Sprintf("%d object(s) the API server would refuse: %s", len(bad), c.Message)
		}
		c.Evidence = append(bad, c.Evidence...)
		return c
	}
	c.Verdict = verify.Warn
	c.Message = fmt.Sprintf("planned: Flux is not installed yet, so no server-side dry run could judge the root's %d object(s) of %s; each was validated offline against %s (its schema, defaults, CEL rules) and is planned as created",
		n, strings.Join(kinds, ", "), v.Origin)
	return c
}

// plan is the dry run's plan of objs: the kinds served are planned by the
// API server (apply.Plan; those in a namespace this run creates, created),
// the others as created (validated by check).
func (pf *plannedFlux) plan(ctx context.Context, cl *apply.Cluster, objs []*unstructured.Unstructured) ([]verify.ObjectChange, error) {
	var ask []*unstructured.Unstructured
	for _, o := range objs {
		if !pf.unserved[o] {
			ask = append(ask, o)
		}
	}
	asked, err := apply.Plan(ctx, cl, ask, apply.PlanOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]verify.ObjectChange, 0, len(objs))
	for _, o := range objs {
		if pf.unserved[o] {
			out = append(out, verify.ObjectChange{Object: apply.ID(o), Action: ssa.CreatedAction})
			continue
		}
		out, asked = append(out, asked[0]), asked[1:]
	}
	return out, nil
}

// stagedReader reads the cluster, and on a dry run what the phases before
// this one staged where the cluster does not hold it yet (a Secret the
// age-key phase installs, the Deployment the controllers phase applies),
// remembering what it read from there.
type stagedReader struct {
	client.Client
	run  *pipeline.Run
	used []string
}

// Get implements client.Reader.
func (s *stagedReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := s.Client.Get(ctx, key, obj, opts...)
	if err == nil || !(apierrors.IsNotFound(err) || meta.IsNoMatchError(err)) {
		return err
	}
	gvk, gerr := apiutil.GVKForObject(obj, s.Scheme())
	if gerr != nil {
		return err
	}
	u := s.run.Staged(gvk.GroupKind(), key.Namespace, key.Name)
	if u == nil {
		return err
	}
	if cerr := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); cerr != nil {
		return err
	}
	s.used = append(s.used, apply.ID(u))
	return nil
}

// planned runs gates over the staged view on a dry run (the cluster alone
// otherwise): a gate that passed only on what an earlier phase of this
// dry run staged warns "planned: …", naming it; it never passes silently.
func planned(run *pipeline.Run, cl client.Client, gates func(client.Client) []verify.Check) []verify.Check {
	if !run.DryRun {
		return gates(cl)
	}
	s := &stagedReader{Client: cl, run: run}
	out := gates(s)
	if len(s.used) == 0 {
		return out
	}
	slices.Sort(s.used)
	used := strings.Join(slices.Compact(s.used), ", ")
	for i, c := range out {
		if c.Verdict == verify.Pass {
			out[i].Verdict = verify.Warn
			out[i].Message = fmt.Sprintf("planned: %s (read from this dry run's plan, not the cluster: %s is applied by a phase before this one, which a dry run does not apply)", c.Message, used)
		}
	}
	return out
}
