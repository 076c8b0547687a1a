// Package controllers is step 1 against a live cluster: the gates before
// (reachable, version, permissions, namespace, ownership, CRD storage), the
// apply with the shared machinery of package apply, the rollout wait, and the
// proof that the live Deployments carry the flags the render computed.
package controllers

import (
	"fmt"
	"strings"

	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// Phase is this package's phase name in reports.
const PhaseName = "controllers"

// StoredVersionsCheck is the before gate: an upgrade that drops a stored
// version stops, with the fix, unless migrate is set.
func StoredVersionsCheck(dropped []apply.Dropped, migrate bool) verify.Check {
	c := GateStoredVersions.New()
	var ev []string
	for _, d := range dropped {
		ev = append(ev, fmt.Sprintf("CustomResourceDefinition/%s stores %s; the new definition serves only up to storage version %s",
			d.CRD.GetName(), strings.Join(d.Versions, ","), d.Storage))
	}
	switch {
	case len(dropped) == 0:
		c.Verdict, c.Message = verify.Pass, "no stored version of any installed Flux CRD is dropped by this render"
	case migrate:
		c.Verdict = verify.Pass
		c.Message = fmt.Sprintf("%d CRD(s) drop a stored version; --migrate-crds rewrites their objects in the new storage version before the apply", len(dropped))
		c.Evidence = ev
	default:
		c.Verdict = verify.Fail
		c.Message = fmt.Sprintf("%d CRD(s) would drop a version their objects are stored in, which the API server refuses; "+
			"re-run with --migrate-crds (serves both versions for the move, rewrites every object in the new storage version, updates status.storedVersions), "+
			"or upgrade through an intermediate Flux release and run `flux migrate`", len(dropped))
		c.Evidence = ev
	}
	return c
}

// PruneCheck reports the prune: a warning for every CRD kept because
// custom resources still use it.
func PruneCheck(s *apply.Stale, dryRun bool) verify.Check {
	c, verb := GatePrune.New(), "pruned"
	if dryRun {
		c, verb = GatePrune.At(verify.Before).New(), "would prune"
	}
	c.Verdict = verify.Pass
	for _, o := range s.Delete {
		c.Evidence = append(c.Evidence, verb+" "+apply.ID(o))
	}
	c.Message = fmt.Sprintf("%s %d object(s) of an earlier install that this render no longer has", verb, len(s.Delete))
	if len(s.Kept) > 0 {
		c.Verdict = verify.Warn
		c.Message += fmt.Sprintf("; kept %d CRD(s) that still have custom resources: delete those resources, or pass --prune-crds to delete them with their CRDs", len(s.Kept))
		c.Evidence = append(c.Evidence, s.Kept...)
	}
	return c
}
