package patches

import (
	"fmt"
	"path"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// PhaseName is the phase the render gates guard: they run before the controllers
// are applied.
const PhaseName = "controllers"

// Gates of the render, checked before anything is applied.
var (
	GateComponents    = verify.Def{ID: "render.components", Phase: PhaseName, Stage: verify.Before, Title: "Flux components rendered"}
	GatePlain         = verify.Def{ID: "overlay.plain", Phase: PhaseName, Stage: verify.Before, Title: "overlays applied"}
	GatePatchLanded   = verify.Def{ID: "overlay.patch-landed", Phase: PhaseName, Stage: verify.Before, Title: "patch changed the render", Prefix: true}
	GateArgsPreserved = verify.Def{ID: "overlay.args-preserved", Phase: PhaseName, Stage: verify.Before, Title: "generated container args kept"}
	GateStrict        = verify.Def{ID: "controllers.strict-substitution", Phase: PhaseName, Stage: verify.Before, Title: "kustomize-controller fails on undefined ${VAR}"}
	GateCommitted     = verify.Def{ID: "overlay.committed-components", Phase: PhaseName, Stage: verify.Before, Title: "the repository's gotk-components.yaml is this render"}
)

// Gates lists the render's gates.
func Gates() []verify.Def {
	return []verify.Def{GateComponents, GatePlain, GatePatchLanded, GateArgsPreserved, GateStrict, GateFeatureGates, GateCommitted}
}

// Prove turns an overlay result into gate checks, in the library's words
// (Phrases.Prove with the zero Phrases). plain says the overlays were
// skipped on purpose: that is a warning, never a silent pass.
func Prove(res *Result, plain bool) []verify.Check { return Phrases{}.Prove(res, plain) }

// Prove is the package's Prove with the checks naming the caller's
// controls in p's words.
func (p Phrases) Prove(res *Result, plain bool) []verify.Check {
	p = p.orDefault()
	var out []verify.Check
	if plain {
		out = append(out, GatePlain.Warn(p.Plain+": the controller overlays were skipped on purpose; the controllers are rendered exactly as `flux install` renders them"))
	}
	for i, pr := range res.Patches {
		out = append(out, patchLanded(i, pr, res.Base, res.SyncObjects))
	}
	out = append(out, argsPreserved(res.Base, res.Final), strictInvariant(res.Base, res.Final, plain, p), featureGates(res.Final))
	if res.CommittedFile != "" {
		out = append(out, committedComponents(res, p))
	}
	return out
}

// committedComponents compares a repository's committed
// gotk-components.yaml with the render: the root applies the committed one
// after every sync, so a controller whose image or args differ there would
// be replaced by it, undoing what this run installs and proves.
func committedComponents(res *Result, p Phrases) verify.Check {
	c := GateCommitted.New()
	var differ, missing, extra []string
	for _, bd := range res.Base {
		id := "Deployment/" + bd.Namespace + "/" + bd.Name
		cd := findDeployment(res.Committed, bd.Namespace, bd.Name)
		if cd == nil {
			missing = append(missing, id)
			continue
		}
		for _, bc := range bd.Spec.Template.Spec.Containers {
			cc := findContainer(cd.Spec.Template.Spec.Containers, bc.Name)
			switch {
			case cc == nil:
				differ = append(differ, fmt.Sprintf("%s container %s: not committed", id, bc.Name))
			case cc.Image != bc.Image:
				differ = append(differ, fmt.Sprintf("%s container %s: committed image %s, rendered %s", id, bc.Name, cc.Image, bc.Image))
			case !slices.Equal(cc.Args, bc.Args):
				differ = append(differ, fmt.Sprintf("%s container %s: committed args %s, rendered %s", id, bc.Name, strings.Join(cc.Args, " "), strings.Join(bc.Args, " ")))
			}
		}
	}
	for _, cd := range res.Committed {
		if findDeployment(res.Base, cd.Namespace, cd.Name) == nil {
			extra = append(extra, "Deployment/"+cd.Namespace+"/"+cd.Name)
		}
	}
	c.Evidence = append(c.Evidence, differ...)
	switch {
	case len(differ) > 0:
		c.Verdict = verify.Fail
		c.Message = fmt.Sprintf("%s differs from this render in %d container(s): the root applies the committed file after every sync and would replace the controllers this run proves; regenerate it (%s) and commit it, or render what is committed",
			res.CommittedFile, len(differ), p.Regenerate(path.Dir(res.CommittedFile)))
	case len(missing) > 0 || len(extra) > 0:
		c.Verdict = verify.Warn
		if len(missing) > 0 {
			c.Evidence = append(c.Evidence, "rendered, not committed (the root leaves it as this run applies it): "+strings.Join(missing, ", "))
		}
		if len(extra) > 0 {
			c.Evidence = append(c.Evidence, "committed, not rendered (the root installs it): "+strings.Join(extra, ", "))
		}
		c.Message = fmt.Sprintf("%s holds other controllers than this render (%d rendered only, %d committed only); the images and args they share agree", res.CommittedFile, len(missing), len(extra))
	default:
		c.Verdict = verify.Pass
		c.Message = fmt.Sprintf("%s is this render: the %d Deployment(s) the root applies again after every sync have the rendered images and args", res.CommittedFile, len(res.Base))
	}
	return c
}

func patchLanded(i int, p PatchResult, base []appsv1.Deployment, syncObjs []string) verify.Check {
	c := GatePatchLanded.Each(fmt.Sprint(i + 1)).New()
	c.Evidence = []string{"patch: " + p.Name, "target: " + p.Target}
	switch {
	case p.Err != nil:
		c.Verdict = verify.Fail
		c.Message = fmt.Sprintf("%s → %s could not be applied: %v; fix the patch or its target", p.Name, p.Target, p.Err)
	case len(p.Changed) == 0 && len(p.Sync) == 0:
		c.Verdict = verify.Fail
		c.Message = fmt.Sprintf("%s → %s changed nothing: the target matches no object or the patch is a no-op; check the target against the rendered objects", p.Name, p.Target)
		var names []string
		for _, d := range base {
			names = append(names, "Deployment/"+d.Namespace+"/"+d.Name)
		}
		c.Evidence = append(c.Evidence, "rendered Deployments: "+strings.Join(names, ", "))
		if len(syncObjs) > 0 {
			c.Evidence = append(c.Evidence, "the FluxInstance's sync objects: "+strings.Join(syncObjs, ", "))
		}
	case len(p.Changed) == 0 && p.SyncPhase:
		c.Verdict = verify.Pass
		c.Message = fmt.Sprintf("%s → %s lands on the sync's %s (applied by phase sync, as the Flux Operator patches the sync objects it generates)", p.Name, p.Target, strings.Join(p.Sync, ", "))
	case len(p.Changed) == 0:
		c.Verdict = verify.Pass
		c.Message = fmt.Sprintf("%s → %s changed %s: not a controller; the sync applies it with the root", p.Name, p.Target, strings.Join(p.Sync, ", "))
	default:
		c.Verdict = verify.Pass
		c.Message = fmt.Sprintf("%s → %s changed %s", p.Name, p.Target, strings.Join(p.Changed, ", "))
		switch {
		case len(p.Sync) > 0 && p.SyncPhase:
			c.Message += fmt.Sprintf(", and the sync's %s (applied by phase sync)", strings.Join(p.Sync, ", "))
		case len(p.Sync) > 0:
			c.Message += fmt.Sprintf(", and %s (the sync applies it with the root)", strings.Join(p.Sync, ", "))
		}
	}
	return c
}

// argsPreserved fails when a generated arg disappeared: the trap of a
// strategic-merge patch replacing the atomic args list. An arg whose flag is
// still there with another value was overridden, not lost.
func argsPreserved(base, final []appsv1.Deployment) verify.Check {
	c := GateArgsPreserved.New()
	c.Verdict = verify.Pass
	var lost []string
	for _, bd := range base {
		fd := findDeployment(final, bd.Namespace, bd.Name)
		for _, bc := range bd.Spec.Template.Spec.Containers {
			where := fmt.Sprintf("Deployment/%s/%s container %s", bd.Namespace, bd.Name, bc.Name)
			if fd == nil {
				lost = append(lost, where+": Deployment removed by the overlay")
				continue
			}
			fc := findContainer(fd.Spec.Template.Spec.Containers, bc.Name)
			if fc == nil {
				lost = append(lost, where+": container removed by the overlay")
				continue
			}
			ff, _ := ParseArgs(fc.Args)
			for _, a := range bc.Args {
				if slices.Contains(fc.Args, a) {
					continue
				}
				name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
				if _, ok := ff.Values[name]; ok || (name == FeatureGatesFlag && len(ff.GateArgs) > 0) {
					c.Evidence = append(c.Evidence, fmt.Sprintf("%s: %s overridden by the overlay", where, a))
					continue
				}
				lost = append(lost, fmt.Sprintf("%s: lost %s", where, a))
			}
		}
	}
	if len(lost) > 0 {
		c.Verdict = verify.Fail
		c.Message = fmt.Sprintf("%d generated arg(s) lost: a strategic-merge patch replaces the whole args list; append with a JSON-6902 `add` to /spec/template/spec/containers/0/args/- instead", len(lost))
		c.Evidence = append(lost, c.Evidence...)
		return c
	}
	c.Message = fmt.Sprintf("every generated arg of %d Deployment(s) is still there", len(base))
	return c
}

// strictInvariant checks that kustomize-controller's effective
// StrictPostBuildSubstitutions is true.
func strictInvariant(base, final []appsv1.Deployment, plain bool, p Phrases) verify.Check {
	c := GateStrict.New()
	var fd *appsv1.Deployment
	for i := range final {
		if final[i].Name == "kustomize-controller" {
			fd = &final[i]
		}
	}
	if fd == nil {
		c.Verdict = verify.Skip
		c.Message = "kustomize-controller is not among the rendered components, so StrictPostBuildSubstitutions cannot be checked; add it to " + p.Components
		return c
	}
	fc := ManagerContainer(fd.Spec.Template.Spec.Containers)
	flags, err := ParseArgs(fc.Args)
	if err != nil {
		c.Verdict = verify.Fail
		c.Message = fmt.Sprintf("Deployment/%s/%s container %s: %v; fix the --feature-gates value", fd.Namespace, fd.Name, fc.Name, err)
		return c
	}
	version := ImageVersion(fc.Image)
	g := EffectiveGate("kustomize-controller", version, flags, StrictSubstitution)
	c.Evidence = []string{
		fmt.Sprintf("Deployment/%s/%s container %s image %s", fd.Namespace, fd.Name, fc.Name, fc.Image),
		"--feature-gates args, in order: " + orNone(strings.Join(flags.GateArgs, " ")),
	}
	var setByOverlay bool
	if bd := findDeployment(base, fd.Namespace, fd.Name); bd != nil {
		bf, _ := ParseArgs(ManagerContainer(bd.Spec.Template.Spec.Containers).Args)
		bv, bok := bf.FeatureGates[StrictSubstitution]
		setByOverlay = g.Explicit && (!bok || bv != g.Value)
	}
	def := "unknown"
	if g.DefaultKnown {
		def = fmt.Sprintf("%t", g.Default)
		c.Evidence = append(c.Evidence, fmt.Sprintf("default in kustomize-controller %s: %s (on from v1.9.0)", version, def))
	}
	who := "the generated args"
	if setByOverlay {
		who = "the overlay"
	}
	switch {
	case !g.Explicit && !g.DefaultKnown:
		c.Verdict = verify.Skip
		c.Message = fmt.Sprintf("image %s carries no version tag, so the default of %s is unknown and no arg sets it; set it explicitly in an overlay", fc.Image, StrictSubstitution)
	case g.Value && g.Explicit && g.Default:
		c.Verdict = verify.Pass
		c.Message = fmt.Sprintf("%s=true: on by default in kustomize-controller %s; the setting by %s is redundant here", StrictSubstitution, version, who)
	case g.Value && g.Explicit:
		c.Verdict = verify.Pass
		c.Message = fmt.Sprintf("%s=true only because of %s: kustomize-controller %s defaults it to %s", StrictSubstitution, who, orNone(version), def)
	case g.Value:
		c.Verdict = verify.Pass
		c.Message = fmt.Sprintf("%s=true by default in kustomize-controller %s; no arg sets it", StrictSubstitution, version)
	case plain:
		c.Verdict = verify.Warn
		c.Message = fmt.Sprintf("%s=false: %s skipped the overlays and kustomize-controller %s defaults it off; an undefined ${VAR} will render as an empty string", StrictSubstitution, p.Plain, version)
	case g.Explicit:
		c.Verdict = verify.Fail
		c.Message = fmt.Sprintf("%s=false: turned off by %s (%s); remove the patch that disables it", StrictSubstitution, who, flags.GateArgs[len(flags.GateArgs)-1])
	default:
		c.Verdict = verify.Fail
		c.Message = fmt.Sprintf("%s=false: kustomize-controller %s defaults it off and no overlay sets it; apply %s", StrictSubstitution, version, p.StrictOverlay)
	}
	return c
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func findDeployment(ds []appsv1.Deployment, ns, name string) *appsv1.Deployment {
	for i := range ds {
		if ds[i].Namespace == ns && ds[i].Name == name {
			return &ds[i]
		}
	}
	return nil
}

func findContainer(cs []corev1.Container, name string) *corev1.Container {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}
