package converge

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// summary is the walk's outcome in one line.
func (p *Phase) summary() string {
	conv, gaveUp := 0, []string{}
	for _, id := range p.g.IDs {
		switch {
		case p.tr.Status(id).State == Converged:
			conv++
		case p.tr.GaveUp(id):
			gaveUp = append(gaveUp, id.String())
		}
	}
	s := fmt.Sprintf("converge: %d/%d converged in %.1fs, %d nudge(s)", conv, len(p.g.Nodes), p.elapsed.Seconds(), p.nudges)
	switch {
	case len(gaveUp) > 0:
		s += "; gave up on " + strings.Join(gaveUp, ", ")
	case p.timedOut:
		s += fmt.Sprintf("; timed out (--timeout %s)", p.o.Timeout)
	}
	return s
}

// record writes the facts and the timeline.
func (p *Phase) record(run *pipeline.Run) {
	f := run.Report.Facts
	conv := 0
	for _, id := range p.g.IDs {
		if p.tr.Status(id).State == Converged {
			conv++
		}
	}
	f["converge.nodes"] = fmt.Sprint(len(p.g.Nodes))
	f["converge.converged"] = fmt.Sprint(conv)
	f["converge.nudges"] = fmt.Sprint(p.nudges)
	f["converge.duration"] = p.elapsed.Round(time.Millisecond).String()
	run.Progress("timeline (since converge started: eligible = its dependencies converged):")
	for _, tl := range p.tr.Timelines() {
		line := timelineText(tl)
		f["converge.timeline."+tl.ID.String()] = line
		run.Progressf("  %-40s %s", tl.ID, line)
	}
	if cp := p.tr.CriticalPath(); len(cp) > 0 {
		var names []string
		for _, id := range cp {
			names = append(names, id.String())
		}
		txt := fmt.Sprintf("%s (%.1fs)", strings.Join(names, " → "), p.elapsed.Seconds())
		f["converge.critical-path"] = txt
		run.Progress("critical path: " + txt)
	}
}

func timelineText(tl Timeline) string {
	at := func(d time.Duration) string {
		if d < 0 {
			return "never"
		}
		return fmt.Sprintf("+%.1fs", d.Seconds())
	}
	s := fmt.Sprintf("eligible %s, converged %s", at(tl.Eligible), at(tl.Converged))
	if d := tl.Duration(); d >= 0 {
		s += fmt.Sprintf(" (%.1fs)", d.Seconds())
	} else {
		s += " (" + string(tl.State) + ")"
	}
	if len(tl.Nudges) > 0 {
		s += fmt.Sprintf(", %d nudge(s)", len(tl.Nudges))
	}
	return s
}

func (p *Phase) nodeCheck(ctx context.Context, id NodeID, events bool) verify.Check {
	d := GateNode.Each(id.String())
	st := p.tr.Status(id)
	src := p.snap.source(p.g.Nodes[id].Source)
	evidence := p.snap.evidence(id, src)
	var tl Timeline
	for _, t := range p.tr.Timelines() {
		if t.ID == id {
			tl = t
		}
	}
	ev := append([]string{"timeline: " + timelineText(tl)}, tl.Nudges...)
	if st.State == Converged {
		return d.Pass(fmt.Sprintf("Ready at %s, the current revision of %s", st.Want, src.Ref), ev...)
	}
	if by := p.tr.doomedBy(id); by != nil {
		return d.Skip(fmt.Sprintf("blocked by %s (converge gave up on it); not checked", *by), append(ev, evidence...)...)
	}
	if rc := p.tr.RootCause(id); rc != id {
		return d.Skip(fmt.Sprintf("blocked by %s (%s); not checked", rc, p.tr.Status(rc).State), append(ev, evidence...)...)
	}
	ev = append(ev, evidence...)
	if events {
		ev = append(ev, p.warnings(ctx, id)...)
	}
	var msg string
	switch {
	case st.State == Terminal && p.snap.suspended(id):
		msg = fmt.Sprintf("%s is suspended: %s", id, resumeHint(id))
	case st.State == Terminal:
		msg = fmt.Sprintf("%s: %s", st.Why, stalledHint(id))
	case p.tr.GaveUp(id):
		msg = fmt.Sprintf("%s (failed at %s after its retry budget): fix it in the repository and push", st.Why, orNone(st.Attempted))
	case st.State == Pending:
		msg = fmt.Sprintf("not created within %s: its dependencies converged, but no %s %s exists: %s", p.o.Timeout, id.KindName(), id.Key(), pendingHint(id))
	default:
		msg = fmt.Sprintf("not converged within %s: %s: %s", p.o.Timeout, st.State, st.Why)
	}
	return d.Fail(msg, ev...)
}

// resumeHint says how to resume a suspended node.
func resumeHint(id NodeID) string {
	return fmt.Sprintf("resume it (spec.suspend: false, or `flux resume %s %s -n %s`), or drop it from the environment", strings.ToLower(id.KindName()), id.Name, id.Namespace)
}

// stalledHint says what to do about a stalled node.
func stalledHint(id NodeID) string {
	if id.IsHelmRelease() {
		return "fix the HelmRelease (its values, chart or remediation settings) in the repository: helm-controller does not retry a stalled release until its spec changes (or `flux reconcile helmrelease --reset`)"
	}
	return "fix the Kustomization's spec in the repository: a stalled object is not retried"
}

// pendingHint says where a missing node should have come from.
func pendingHint(id NodeID) string {
	if id.IsHelmRelease() {
		return "is it in what its Kustomization applies, and did that Kustomization apply the revision you expect?"
	}
	return "is it in what the root applies (and is the root at the revision you expect)?"
}

// warnings are the node's most recent Warning events, for evidence.
func (p *Phase) warnings(ctx context.Context, id NodeID) []string {
	if p.cl.Clientset == nil {
		return nil
	}
	list, err := p.cl.Clientset.CoreV1().Events(id.Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=" + id.KindName() + ",involvedObject.name=" + id.Name + ",type=" + corev1.EventTypeWarning,
	})
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return []string{"warning events: not read (timed out)"}
		}
		return []string{"warning events: not read: " + err.Error()}
	}
	items := list.Items
	sort.Slice(items, func(i, j int) bool { return eventTime(items[i]).After(eventTime(items[j])) })
	var out []string
	for i, e := range items {
		if i == 3 {
			break
		}
		out = append(out, fmt.Sprintf("event %s %s (×%d, %s): %s", e.Type, e.Reason, max(e.Count, 1), eventTime(e).UTC().Format(time.RFC3339), strings.TrimSpace(e.Message)))
	}
	if len(out) == 0 {
		out = append(out, "no Warning events")
	}
	return out
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// verdicts are the node gates' verdicts with a short label, for --graph.
func (p *Phase) verdicts(ctx context.Context) map[NodeID]NodeVerdict {
	out := map[NodeID]NodeVerdict{}
	for _, tl := range p.tr.Timelines() {
		c := p.nodeCheck(ctx, tl.ID, false)
		label := string(tl.State)
		if d := tl.Duration(); d >= 0 {
			label = fmt.Sprintf("%s %.1fs", label, d.Seconds())
		}
		out[tl.ID] = NodeVerdict{Verdict: c.Verdict, Label: label}
	}
	return out
}
