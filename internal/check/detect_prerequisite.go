package check

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// detPrerequisite is the [prerequisite] row of the table of detectors.
var detPrerequisite = detector{ID: Prerequisite, Gate: Knobs, Advisory: true,
	Short:   "substituteFrom object made outside the environment: it must exist before the Kustomizations reading it reconcile",
	Rule:    "fluxcd/pkg/kustomize v1.35.6 LoadVariables: a substituteFrom object that is not optional and not found fails the build",
	Emitted: "prerequisiteFinding",
}

// prerequisiteFinding is the warning for key, which no Kustomization of env
// renders and readers substitute from (not optionally): made outside the
// environment (out of band at bootstrap, by another tool), a prerequisite,
// not a defect offline; the live gates require it, with these keys.
func prerequisiteFinding(env *fluxrepo.Env, u usage, key string, readers []string, users string, first *fluxrepo.Kustomization, elsewhere otherSourceKs) finding {
	need := map[string]bool{}
	for _, by := range readers {
		maps.Copy(need, u.assumed[by])
	}
	keys := "no key the repository shows"
	if len(need) > 0 {
		keys = "keys " + strings.Join(slices.Sorted(maps.Keys(need)), ", ")
	}
	kind, _, _ := strings.Cut(key, "/")
	// The reference's entry; the Kustomization when a patch added it.
	loc := entryLocation(env, first.Location, d2name(key), "name", "spec", "postBuild", "substituteFrom")
	f := at(loc, verify.Finding{Detector: Prerequisite, Verdict: verify.Warn,
		Message: fmt.Sprintf("prerequisite %s (%s used) is substituted from by %s and no Kustomization of %s renders it: it must exist before they reconcile, or the controller fails them with \"substitute from '%s/%s' error: not found\"%s", key, keys, users, env.Options.Path, kind, d2name(key), elsewhere.say()),
		Fix:     fmt.Sprintf("create %s out of band before bootstrap (or render it, e.g. as an ExternalSecret or a SOPS Secret, in a Kustomization they depend on); mark the reference optional: true if it may be absent", key),
		// One block for every prerequisite (issue #45 item 6):
		// the text report groups them by this cause.
		Cause:    prereqCause(env, elsewhere),
		Item:     fmt.Sprintf("%s (%s; read by %s)", key, keys, users),
		CauseFix: "create each out of band before bootstrap (or render it, e.g. as an ExternalSecret or a SOPS Secret, in a Kustomization its readers depend on), or declare it under prerequisites.declared in " + PolicyFile + "; mark a reference optional: true if it may be absent"})
	f.name = key
	return f
}
