//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/sandbox/runner"
)

// incidentKnob is the cluster-vars key the CNI chart needs; the seed
// incident shipped it empty into the Cilium HelmRelease.
const incidentKnob = "k8sServiceHost"

// stageIncident replays the seed incident on a sandbox of its own with the
// real helm-controller and the chart registry: the HelmRelease fixture is
// brought up (the cilium release holds the knob), then a commit loses the
// knob from cluster-vars. With the tool's overlay (the gate on) the cilium
// Kustomization fails closed naming the variable, the Helm release keeps its
// last good values, `up` exits 1 naming it and `status` fails. With the gate
// off, as Flux 2.4 ran (the live Deployment patched, as a cluster without
// the tool would have it), the Kustomization is Ready and the installed
// release really carries the knob empty, read back from Helm's storage.
// BREAK: the stage expects the gate on to fail open — the wrong outcome.
func (g *gauntlet) stageIncident(ctx context.Context, s *stageResult, broken bool) error {
	e, err := startEnv(ctx, suite.envConfig, "incident", filepath.Join(g.tmp, "incident"), envOptions{runner: true, git: true, registry: true})
	if err != nil {
		return err
	}
	ge := &gEnv{env: e}
	defer ge.stop()
	f := newHelmFixture(ctx, g.t, e)
	up := []string{"up", "--repo", f.dir, "--env", "dev", "--timeout", "4m", "--fail-after", "60s"}
	r := g.cli(ctx, ge, "", up...)
	if r.code != 0 {
		return fmt.Errorf("the good bring-up: exit %d: %s", r.code, r.firstProblem())
	}
	good, err := deployedRelease(ctx, e.client, e.cs, "kube-system", "cilium")
	if err != nil {
		return err
	}
	goodHost, _ := good.Config[incidentKnob].(string)
	if goodHost == "" {
		return fmt.Errorf("the good bring-up installed cilium with %s %q", incidentKnob, goodHost)
	}
	s.Evidence = append(s.Evidence, fmt.Sprintf("good bring-up: `bootstrap up` exit 0; Helm release cilium v%d (%s) with %s %q",
		good.Version, good.Info.Status, incidentKnob, goodHost))

	// The trigger: the knob is gone from cluster-vars at the revision the
	// cilium Kustomization renders.
	varsFile := filepath.Join(f.dir, "clusters", "dev", "cluster-vars.yaml")
	b, err := os.ReadFile(varsFile)
	if err != nil {
		return err
	}
	var kept []string
	for _, l := range strings.SplitAfter(string(b), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), incidentKnob+":") {
			kept = append(kept, l)
		}
	}
	lost := strings.Join(kept, "")
	if lost == string(b) {
		return fmt.Errorf("%s does not define %s", varsFile, incidentKnob)
	}
	sha, err := f.repo.Commit(ctx, "", map[string]string{"clusters/dev/cluster-vars.yaml": lost}, "cluster-vars: "+incidentKnob+" lost")
	if err != nil {
		return err
	}
	if err := os.WriteFile(varsFile, []byte(lost), 0o644); err != nil {
		return err
	}
	rev := "main@sha1:" + sha
	// `bootstrap diff` of the incident commit, before anything applies it
	// (issue #47): judged below against what the controllers do.
	pred, err := predictIncident(ctx, g.t, e.git.URL+"/helm.git", filepath.Join(g.tmp, "incident-clone"))
	if err != nil {
		return err
	}
	s.Evidence = append(s.Evidence, pred.evidence())

	// Gate on: the tool's overlay (the default). check is forced off: the
	// static gate would stop this commit before anything applied (stage
	// hazard); here the controller's own gate is on trial.
	r = g.cli(ctx, ge, "", append(up, "--check=false")...)
	node := r.report.check("converge.node/flux-system/cilium")
	after, err := deployedRelease(ctx, e.client, e.cs, "kube-system", "cilium")
	if err != nil {
		return err
	}
	afterHost, _ := after.Config[incidentKnob].(string)
	var cv corev1.ConfigMap
	if err := e.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: "cluster-vars"}, &cv); err != nil {
		return err
	}
	var managers []string
	for _, m := range cv.ManagedFields {
		managers = append(managers, m.Manager+"/"+string(m.Operation))
	}
	var keys []string
	for k := range cv.Data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var ck kustomizev1.Kustomization
	if err := e.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: "cilium"}, &ck); err != nil {
		return err
	}
	s.Evidence = append(s.Evidence, fmt.Sprintf("cluster-vars after the sync: keys %v, field managers %v (the key removed from Git is gone: the root's fields were handed to kustomize-controller); cilium last applied %s, attempted %s",
		keys, managers, shortRev(ck.Status.LastAppliedRevision), shortRev(ck.Status.LastAttemptedRevision)))
	st := g.cli(ctx, ge, "", "status", "--repo", f.dir, "--env", "dev")
	stNode := st.report.check("converge.node/flux-system/cilium")
	s.Evidence = append(s.Evidence,
		fmt.Sprintf("gate on, %s lost at %s: `bootstrap up --check=false` exit %d; %s", incidentKnob, shortRev(rev), r.code, node),
		fmt.Sprintf("gate on: Helm release cilium v%d with %s %q; `bootstrap status` exit %d; %s", after.Version, incidentKnob, afterHost, st.code, stNode))
	closed := r.code == 1 && strings.HasPrefix(node, "fail") && strings.Contains(node, strictError) && strings.Contains(node, incidentKnob) &&
		after.Version == good.Version && afterHost == goodHost &&
		st.code == 1 && strings.HasPrefix(stNode, "fail")
	if broken {
		// The wrong expectation: the gate on fails open.
		if afterHost != "" || r.code == 1 {
			return fmt.Errorf("BREAK=incident expected the gate on to fail open (cilium Ready, the release with %s \"\"): the cilium Kustomization failed closed (%s) and the release kept v%d with %q",
				incidentKnob, node, after.Version, afterHost)
		}
		return nil
	}
	if !closed {
		return fmt.Errorf("gate on: want up exit 1 with cilium failing %q naming %s, the release kept at v%d %q, status exit 1; got up exit %d (%s), release v%d %q, status exit %d (%s)",
			strictError, incidentKnob, good.Version, goodHost, r.code, node, after.Version, afterHost, st.code, stNode)
	}
	if err := pred.checkGateOn(); err != nil {
		return err
	}

	// Gate off, as Flux 2.4 ran: the live kustomize-controller Deployment
	// patched by a plain client; the runner restarts the controller with it.
	var d appsv1.Deployment
	if err := e.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: "kustomize-controller"}, &d); err != nil {
		return err
	}
	args := d.Spec.Template.Spec.Containers[0].Args
	i := slices.Index(args, strictFlag)
	if i < 0 {
		return fmt.Errorf("the live kustomize-controller does not carry %s: %q", strictFlag, args)
	}
	args[i] = strings.Replace(strictFlag, "=true", "=false", 1)
	if err := e.client.Update(ctx, &d); err != nil {
		return err
	}
	if err := e.runner.WaitFor(ctx, func(rs runner.Status) bool {
		in := rs.Instances["kustomize-controller"]
		return in.Ready && runner.EffectiveGates(in.Args)[runner.StrictGate] == "false"
	}); err != nil {
		return fmt.Errorf("gate off: %v", err)
	}
	t0 := time.Now()
	if _, err := ge.waitKustomizations(ctx, []string{"cilium"}, rev); err != nil {
		return fmt.Errorf("gate off: %v", err)
	}
	// helm-controller upgrades the release with the values cilium applied.
	var open = after
	for open.Version == good.Version {
		ge.nudge(ctx, &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "cilium"}})
		select {
		case <-ctx.Done():
			return fmt.Errorf("gate off: the cilium release stayed at v%d", good.Version)
		case <-time.After(500 * time.Millisecond):
		}
		if open, err = deployedRelease(ctx, e.client, e.cs, "kube-system", "cilium"); err != nil {
			return err
		}
	}
	// The substituted value is empty: in the release's values it is null
	// (the YAML scalar left empty), so the chart's default, "", renders.
	raw, present := open.Config[incidentKnob]
	openHost, _ := raw.(string)
	var ds appsv1.DaemonSet
	if err := e.client.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "cilium-agent"}, &ds); err != nil {
		return err
	}
	agentHost := "<unset>"
	for _, ev := range ds.Spec.Template.Spec.Containers[0].Env {
		if ev.Name == "KUBERNETES_SERVICE_HOST" {
			agentHost = ev.Value
		}
	}
	s.Evidence = append(s.Evidence, fmt.Sprintf("gate off (the live Deployment patched to %s=false, the controller restarted with it): cilium Ready at %s %s later; Helm release cilium v%d (%s) with values %s: %s; the agent DaemonSet's KUBERNETES_SERVICE_HOST %q",
		runner.StrictGate, shortRev(rev), time.Since(t0).Round(100*time.Millisecond), open.Version, open.Info.Status, incidentKnob, describeValue(raw, present), agentHost))
	if openHost != "" || agentHost != "" {
		return fmt.Errorf("gate off: want the release and the agents with %s empty (fail open); got release v%d %s, agents %q", incidentKnob, open.Version, describeValue(raw, present), agentHost)
	}
	if err := pred.checkGateOff(describeValue(raw, present)); err != nil {
		return err
	}
	s.Detail = fmt.Sprintf("%s lost from cluster-vars at %s. Gate on (the tool's overlay): cilium failed closed with %q, `up` exit 1 and `status` exit 1 naming it, the Helm release kept v%d with %s %q. Gate off (Flux 2.4): cilium Ready, Helm release v%d installed with %s %s in its values and the agents' KUBERNETES_SERVICE_HOST empty — the seed incident.",
		incidentKnob, shortRev(rev), strictError, good.Version, incidentKnob, goodHost, open.Version, incidentKnob, describeValue(raw, present))
	return nil
}

// describeValue says what a Helm values key holds, null and absent apart.
func describeValue(v any, present bool) string {
	switch {
	case !present:
		return "absent"
	case v == nil:
		return "null"
	default:
		return fmt.Sprintf("%q", fmt.Sprint(v))
	}
}
