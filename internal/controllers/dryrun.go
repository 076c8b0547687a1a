package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/fluxcd/pkg/ssa"
	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// GateDryRun is what a dry run of the controllers could ask the API server
// and what it could not: reported on a dry run only.
var GateDryRun = verify.Def{ID: "controllers.dry-run", Phase: PhaseName, Stage: verify.After, Optional: true,
	Title: "the objects a dry run creates are validated by the API server where it can"}

// dryRunCreates asks the API server to validate, with a server-side dry
// run, every object the plan creates: apply.Plan plans an absent object as
// created from the live read alone. An object in a namespace that does not
// exist yet cannot be dry-run (the API server's NamespaceLifecycle
// admission refuses any request in it): it is planned, and the check says
// so ("planned: …", warn) instead of passing. A dry run the API server
// refuses fails the check with its message: a real defect of the render.
func dryRunCreates(ctx context.Context, cl *apply.Cluster, objs []*unstructured.Unstructured, plan []verify.ObjectChange, newNamespaces []string) verify.Check {
	created := map[string]bool{}
	for _, oc := range plan {
		if oc.Action == ssa.CreatedAction {
			created[oc.Object] = true
		}
	}
	var ask, planned []*unstructured.Unstructured
	for _, o := range objs {
		switch {
		case !created[apply.ID(o)]:
		case o.GetNamespace() != "" && slices.Contains(newNamespaces, o.GetNamespace()):
			planned = append(planned, o)
		default:
			ask = append(ask, o)
		}
	}
	refused := make([]string, len(ask))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, o := range ask {
		g.Go(func() error {
			if _, _, _, err := cl.Manager.Diff(gctx, o.DeepCopy(), ssa.DefaultDiffOptions()); err != nil {
				// ssa's error names the object already ("Kind/ns/name
				// dry-run failed (Invalid): …"); name it once.
				refused[i] = err.Error()
				if !strings.HasPrefix(refused[i], apply.ID(o)) {
					refused[i] = apply.ID(o) + ": " + refused[i]
				}
			}
			return nil
		})
	}
	_ = g.Wait()
	refused = slices.DeleteFunc(refused, func(s string) bool { return s == "" })
	c := GateDryRun.New()
	switch {
	case len(refused) > 0:
		c.Verdict = verify.Fail
		c.Message = fmt.Sprintf("the API server refuses %d of the %d object(s) this apply creates (server-side dry run): %s", len(refused), len(ask), refused[0])
		c.Evidence = refused
	case len(planned) > 0:
		c.Verdict = verify.Warn
		c.Message = fmt.Sprintf("planned: %d object(s) in namespace %s, which this apply creates first, are planned as created without a server-side dry run (the API server refuses any request in a namespace that does not exist yet); the %d other object(s) it creates passed the server-side dry run",
			len(planned), strings.Join(newNamespaces, ", "), len(ask))
		for _, o := range planned {
			c.Evidence = append(c.Evidence, "planned, not dry-run: "+apply.ID(o))
		}
	default:
		c.Verdict = verify.Pass
		c.Message = fmt.Sprintf("the %d object(s) this apply creates passed a server-side dry run", len(ask))
	}
	return c
}
