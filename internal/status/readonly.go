package status

import (
	"context"
	"fmt"
	"strings"

	"github.com/homelab-ops/bootstrap/internal/kube"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// PhaseName is the phase of status's own gate.
const PhaseName = "status"

// GateReadOnly: every request status sent was a read. Optional: when an
// earlier phase stopped the run, its own gates already say so.
var GateReadOnly = verify.Def{ID: "status.read-only", Phase: PhaseName, Stage: verify.After, Title: "only reads were sent to the cluster", Optional: true}

// ReadOnlyPhase reports what kube.ReadOnly recorded: the requests by verb,
// and any write the transport refused (a bug: it fails).
type ReadOnlyPhase struct {
	pipeline.Base // Before, Do: it only reports
	rec           *kube.Requests
}

var _ pipeline.Phase = (*ReadOnlyPhase)(nil)

// NewReadOnlyPhase reports rec; it runs last.
func NewReadOnlyPhase(rec *kube.Requests) *ReadOnlyPhase { return &ReadOnlyPhase{rec: rec} }

// Name is "status".
func (p *ReadOnlyPhase) Name() string { return PhaseName }

// Gates implements pipeline.Phase.
func (p *ReadOnlyPhase) Gates() []verify.Def { return []verify.Def{GateReadOnly} }

// After reports the requests.
func (p *ReadOnlyPhase) After(_ context.Context, run *pipeline.Run) []verify.Check {
	run.Report.Facts["apiRequests"] = p.rec.String()
	total := 0
	for _, n := range p.rec.Verbs() {
		total += n
	}
	if refused := p.rec.Refused(); len(refused) > 0 {
		return []verify.Check{GateReadOnly.Fail(fmt.Sprintf("%d write(s) were attempted and refused in the process (a bug in status: report it): %s", len(refused), strings.Join(refused, ", ")), refused...)}
	}
	return []verify.Check{GateReadOnly.Pass(fmt.Sprintf("%d request(s), all reads (%s); nothing written, no lock taken", total, p.rec.String()))}
}
