// Package runner is a kubelet for the Flux controllers the sandbox can run:
// it watches the controller Deployments and runs the matching local binary
// with exactly the Deployment container's args and env, rewriting only
// listen/advertise addresses and paths to loopback and temp directories.
package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/homelab-ops/bootstrap/pkg/patches"
)

// StrictGate is kustomize-controller's strict post-build substitution gate.
const StrictGate = patches.StrictSubstitution

// strictDefaultFrom is the first kustomize-controller version whose
// StrictGate defaults to on (pkg/patches holds the table).
const strictDefaultFrom = "v1.9.0"

// PlanInput is what BuildPlan needs besides the Deployment.
type PlanInput struct {
	// Controller is the Deployment (and binary) name, e.g. kustomize-controller.
	Controller string
	// Binary is the local executable.
	Binary string
	// BinaryVersion is the version the binary was built from, e.g. v1.9.5.
	BinaryVersion string
	// Dir is this instance's scratch directory (volumes, HOME, TMPDIR).
	Dir string
	// Kubeconfig is passed as KUBECONFIG.
	Kubeconfig string
	// Ports are free loopback ports: metrics, health and (source-controller) storage.
	MetricsPort, HealthPort, StoragePort int
	// IgnoreDeploymentArgs drops the Deployment's args (a negative control
	// proving that tests depend on them). Never set it otherwise.
	IgnoreDeploymentArgs bool
}

// Plan is how to run one controller.
type Plan struct {
	Controller string
	Binary     string
	Args       []string
	Env        []string
	// ImageVersion is the Deployment image's tag.
	ImageVersion string
	// Notes explain deviations: version mismatch, injected defaults.
	Notes []string
	// TemplateHash identifies the pod template the plan came from.
	TemplateHash string
	// StorageAddr is source-controller's artifact server address, if any.
	StorageAddr string
	// HealthAddr serves /readyz and /healthz (controller-runtime);
	// MetricsAddr its Prometheus metrics (gotk_reconcile_duration_seconds).
	HealthAddr, MetricsAddr string
}

// TemplateHash hashes a pod template; a change means "restart".
func TemplateHash(t *corev1.PodTemplateSpec) string {
	b, _ := json.Marshal(t)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// ImageVersion returns the tag of an image reference ("" if none).
func ImageVersion(image string) string { return patches.ImageVersion(image) }

// ManagerContainer picks the controller's container: the one named
// "manager" (Flux's convention), else the only one.
func ManagerContainer(dep *appsv1.Deployment) (*corev1.Container, error) {
	cs := dep.Spec.Template.Spec.Containers
	for i := range cs {
		if cs[i].Name == "manager" {
			return &cs[i], nil
		}
	}
	if len(cs) == 1 {
		return &cs[0], nil
	}
	return nil, fmt.Errorf("deployment %s/%s: no container named manager among %d", dep.Namespace, dep.Name, len(cs))
}

// BuildPlan turns a controller Deployment into a local command line.
func BuildPlan(dep *appsv1.Deployment, in PlanInput) (*Plan, error) {
	c, err := ManagerContainer(dep)
	if err != nil {
		return nil, err
	}
	where := fmt.Sprintf("deployment %s/%s container %s", dep.Namespace, dep.Name, c.Name)
	if len(c.Command) > 0 {
		return nil, fmt.Errorf("%s sets command %q: the sandbox runs the image's entrypoint only", where, c.Command)
	}
	if len(c.EnvFrom) > 0 {
		return nil, fmt.Errorf("%s uses envFrom: not supported by the sandbox runner", where)
	}
	p := &Plan{
		Controller:   in.Controller,
		Binary:       in.Binary,
		ImageVersion: ImageVersion(c.Image),
		TemplateHash: TemplateHash(&dep.Spec.Template),
	}
	mounts := volumePaths(c, in.Dir)

	// Env, in order, with $(VAR) references to earlier entries, as kubelet does.
	vars := map[string]string{}
	var env []string
	for _, e := range c.Env {
		v, err := envValue(dep, c, e, vars)
		if err != nil {
			return nil, fmt.Errorf("%s env %s: %w", where, e.Name, err)
		}
		if v == "" && e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil {
			continue // GOMEMLIMIT=0 would be worse than no limit
		}
		v = rewritePath(v, mounts)
		vars[e.Name] = v
		env = append(env, e.Name+"="+v)
	}
	env = append(env,
		"KUBECONFIG="+in.Kubeconfig,
		"HOME="+filepath.Join(in.Dir, "home"),
		"TMPDIR="+filepath.Join(in.Dir, "tmp"),
	)
	p.Env = env

	var args []string
	if !in.IgnoreDeploymentArgs {
		for _, a := range c.Args {
			args = append(args, expand(a, vars))
		}
	}

	// Addresses: always loopback, on this instance's ports, whether or not
	// the Deployment names them (the binaries' defaults would collide).
	p.HealthAddr = fmt.Sprintf("127.0.0.1:%d", in.HealthPort)
	p.MetricsAddr = fmt.Sprintf("127.0.0.1:%d", in.MetricsPort)
	set := map[string]string{
		"metrics-addr": fmt.Sprintf("127.0.0.1:%d", in.MetricsPort),
		"health-addr":  fmt.Sprintf("127.0.0.1:%d", in.HealthPort),
		// No notification-controller runs in the sandbox.
		"events-addr": "",
	}
	if in.Controller == "source-controller" {
		p.StorageAddr = fmt.Sprintf("127.0.0.1:%d", in.StoragePort)
		set["storage-addr"] = p.StorageAddr
		set["storage-adv-addr"] = p.StorageAddr
		set["storage-path"] = filepath.Join(in.Dir, "storage")
	}
	args = rewriteFlags(args, set, mounts)
	// controller-runtime finds the election namespace only in the pod's
	// service-account mount, which a local process lacks; one local
	// instance needs no election, so the flag is dropped, and said so.
	if i := slices.Index(args, "--enable-leader-election"); i >= 0 {
		args = slices.Delete(args, i, i+1)
		p.Notes = append(p.Notes, "--enable-leader-election dropped: no in-cluster namespace file outside a pod, and one local instance needs no election")
	}

	flags, _ := patches.ParseArgs(args)
	if g := patches.EffectiveGate(in.Controller, p.ImageVersion, flags, StrictGate); g.DefaultKnown && !g.Default && !g.Explicit {
		args = append(args, "--feature-gates="+StrictGate+"=false")
		p.Notes = append(p.Notes, fmt.Sprintf("image %s predates %s: passing --feature-gates=%s=false to reproduce its default", p.ImageVersion, strictDefaultFrom, StrictGate))
	}
	if p.ImageVersion != "" && in.BinaryVersion != "" && p.ImageVersion != in.BinaryVersion {
		p.Notes = append(p.Notes, fmt.Sprintf("deployment image is %s but the sandbox runs the %s binary", p.ImageVersion, in.BinaryVersion))
	}
	if in.IgnoreDeploymentArgs {
		p.Notes = append(p.Notes, "IGNORING the deployment's args (negative control)")
	}
	p.Args = args
	return p, nil
}

// volumePaths maps each mountPath to a directory under dir.
func volumePaths(c *corev1.Container, dir string) map[string]string {
	m := map[string]string{}
	for _, vm := range c.VolumeMounts {
		m[filepath.Clean(vm.MountPath)] = filepath.Join(dir, "volumes", strings.Trim(vm.MountPath, "/"))
	}
	return m
}

// rewritePath moves a path under a volume mount into the instance dir.
func rewritePath(v string, mounts map[string]string) string {
	for mp, local := range mounts {
		if v == mp || strings.HasPrefix(v, mp+"/") {
			return local + strings.TrimPrefix(v, mp)
		}
	}
	return v
}

// rewriteFlags replaces the value of every flag in set (adding the flag if
// absent) and moves volume paths; every other arg is kept as is, in order.
func rewriteFlags(args []string, set map[string]string, mounts map[string]string) []string {
	seen := map[string]bool{}
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasEq := splitFlag(a)
		if name == "" {
			out = append(out, rewritePath(a, mounts))
			continue
		}
		if v, ok := set[name]; ok {
			seen[name] = true
			if !hasEq && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++ // "--flag value": drop the old value
			}
			out = append(out, "--"+name+"="+v)
			continue
		}
		if hasEq {
			out = append(out, "--"+name+"="+rewritePath(val, mounts))
		} else {
			out = append(out, a)
		}
	}
	for _, name := range sortedKeys(set) {
		if !seen[name] {
			out = append(out, "--"+name+"="+set[name])
		}
	}
	return out
}

func splitFlag(a string) (name, val string, hasEq bool) {
	if !strings.HasPrefix(a, "-") {
		return "", "", false
	}
	s := strings.TrimLeft(a, "-")
	if i := strings.Index(s, "="); i >= 0 {
		return s[:i], s[i+1:], true
	}
	return s, "", false
}

// EffectiveGates merges every --feature-gates arg the way the controllers
// do (pkg/patches parses them with the controllers' own flag type); later
// values win.
func EffectiveGates(args []string) map[string]string {
	f, _ := patches.ParseArgs(args)
	g := map[string]string{}
	for k, v := range f.FeatureGates {
		g[k] = strconv.FormatBool(v)
	}
	return g
}

// expand implements the $(VAR) syntax of container args and env: known
// variables are replaced, $$ escapes, unknown references stay literal.
func expand(s string, vars map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

func envValue(dep *appsv1.Deployment, c *corev1.Container, e corev1.EnvVar, vars map[string]string) (string, error) {
	if e.ValueFrom == nil {
		return expand(e.Value, vars), nil
	}
	switch {
	case e.ValueFrom.FieldRef != nil:
		switch e.ValueFrom.FieldRef.FieldPath {
		case "metadata.namespace":
			return dep.Namespace, nil
		case "metadata.name":
			return dep.Name + "-sandbox", nil
		case "spec.serviceAccountName":
			return dep.Spec.Template.Spec.ServiceAccountName, nil
		case "spec.nodeName":
			return "sandbox-node-0", nil
		case "status.podIP", "status.hostIP":
			return "127.0.0.1", nil
		default:
			return "", fmt.Errorf("fieldRef %s is not supported by the sandbox runner", e.ValueFrom.FieldRef.FieldPath)
		}
	case e.ValueFrom.ResourceFieldRef != nil:
		return resourceValue(c, e.ValueFrom.ResourceFieldRef)
	default:
		return "", fmt.Errorf("only fieldRef and resourceFieldRef are supported by the sandbox runner")
	}
}

// resourceValue mirrors kubelet: the quantity divided by the divisor,
// rounded up; an unset limit resolves to the node's allocatable, which for
// the sandbox is "unlimited", so the variable is left unset ("").
func resourceValue(c *corev1.Container, r *corev1.ResourceFieldSelector) (string, error) {
	var list corev1.ResourceList
	res := r.Resource
	switch {
	case strings.HasPrefix(res, "limits."):
		list, res = c.Resources.Limits, strings.TrimPrefix(res, "limits.")
	case strings.HasPrefix(res, "requests."):
		list, res = c.Resources.Requests, strings.TrimPrefix(res, "requests.")
	default:
		return "", fmt.Errorf("resourceFieldRef %s is not supported", r.Resource)
	}
	q, ok := list[corev1.ResourceName(res)]
	if !ok {
		return "", nil
	}
	div := r.Divisor
	if div.IsZero() {
		div = resource.MustParse("1")
	}
	v := math.Ceil(float64(q.MilliValue()) / float64(div.MilliValue()))
	return fmt.Sprintf("%d", int64(v)), nil
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
