package check

import (
	"fmt"
	"strings"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// detUnread is the [unread] row of the table of detectors.
var detUnread = detector{ID: Unread, Gate: Render, Advisory: true,
	Short:   "kustomization entry an offline check cannot read (remote resource, base or generator file; a file over the read bound): what it adds is not checked",
	Rule:    "kustomize-controller v1.9.5 builds with kustomize api v0.21 (fluxcd/pkg/kustomize Generator), which fetches remote resources: an offline check cannot",
	Emitted: "unreadFinding",
}

// unreadFinding is the [unread] warning of an entry this offline check
// cannot read: left out of the builds that read it; what it adds is not
// checked (kustomize-controller reads it).
func unreadFinding(h *fluxrepo.Hole) finding {
	var by []string
	for _, b := range h.By {
		if b == "" {
			b = "the root directory"
		} else {
			b = "Kustomization " + b
		}
		by = append(by, b)
	}
	fix := "vendor it into the repository to have it checked offline; kustomize-controller fetches it as written"
	if !strings.Contains(h.Why, "remote") {
		fix = "split it into files under the read bound to have them checked"
	}
	return at(h.Location, verify.Finding{Detector: Unread, Verdict: verify.Warn,
		Message: fmt.Sprintf("%s entry %q is %s: left out of the build of %s, so the objects it adds are not checked", h.Field, h.Entry, h.Why, strings.Join(by, ", ")),
		Fix:     fix})
}
