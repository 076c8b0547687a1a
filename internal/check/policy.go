package check

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/homelab-ops/bootstrap/internal/bootstrapfiles"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/input"
	"github.com/homelab-ops/bootstrap/internal/safeio"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// PolicyFile is the repository's check policy, at the repository root
// (docs/policy.md). It makes the check stricter or looser where a team
// chose so, each choice with a reason; every finding it changes is still
// reported, as "allowed (reason)" or "required by policy (reason)".
const PolicyFile = ".bootstrap.yaml"

// MaxPolicyBytes bounds PolicyFile (input.MaxConfig, as a --config file).
const MaxPolicyBytes = input.MaxConfig

// Policy is the schema of PolicyFile (version 1).
type Policy struct {
	Version          int              `json:"version"`
	DefaultOperators DefaultOpPolicy  `json:"defaultOperators,omitempty"`
	Prerequisites    PrereqPolicy     `json:"prerequisites,omitempty"`
	Advisories       AdvisoriesPolicy `json:"advisories,omitempty"`

	file string
	root *yaml.Node
	// seeded is what the repository's bootstrap creates before Flux
	// (withBootstrap): prerequisites as the declared ones.
	seeded *bootstrapfiles.Bootstrap

	// OtherSources (issue 45): "note" (the default: a Kustomization of
	// another repository's source, which this check does not read, is a
	// note) or "required" (its unchecked path makes the run incomplete).
	OtherSources string `json:"otherSources,omitempty"`
}

// DefaultOpPolicy judges default-operator forms on undefined names.
type DefaultOpPolicy struct {
	// OnUndefined: "advisory" (the default: a template default in a plain
	// field is a warning) or "fail" (every form on an undefined name fails).
	OnUndefined string `json:"onUndefined,omitempty"`
	// Allow lists names (path.Match patterns) whose forms are allowed.
	Allow []AllowNames `json:"allow,omitempty"`
}

// AllowNames allows the default-operator forms on matching names.
type AllowNames struct {
	Names  []string `json:"names"`
	Reason string   `json:"reason"`
}

// PrereqPolicy declares the objects made outside the repository.
type PrereqPolicy struct {
	// Undeclared: "warn" (the default) or "fail" for a substituteFrom
	// object nothing renders and Declared does not list.
	Undeclared string                 `json:"undeclared,omitempty"`
	Declared   []DeclaredPrerequisite `json:"declared,omitempty"`
}

// DeclaredPrerequisite is one object made out of band, with the keys it
// holds.
type DeclaredPrerequisite struct {
	Kind      string   `json:"kind"`
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	Keys      []string `json:"keys,omitempty"`
	CreatedBy string   `json:"createdBy"`
}

// AdvisoriesPolicy turns advisory detectors off.
type AdvisoriesPolicy struct {
	Disable []AdvisoryOff `json:"disable,omitempty"`
}

// AdvisoryOff turns one advisory detector's warnings off.
type AdvisoryOff struct {
	Detector verify.Detector `json:"detector"`
	Reason   string          `json:"reason"`
}

// LoadPolicy reads PolicyFile from the repository (nil when there is
// none), held to its schema: unknown fields, values and missing reasons are
// input errors naming the file, the line and the fix.
func LoadPolicy(repo string) (*Policy, error) {
	rd, err := safeio.OpenDir(repo, "--repo "+repo)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	// Bounded like every input, and small: a policy is a few lines, and
	// decoding YAML takes tens of times its size in memory.
	b, err := rd.ReadFileMax(PolicyFile, MaxPolicyBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, verify.InputErrorf("%w (the check policy, docs/policy.md)", err)
	}
	if line, why := safeio.AliasBomb(b); why != "" {
		return nil, verify.InputErrorf("%s: %s: write the policy out without aliases (docs/policy.md)", fluxrepo.Location{File: PolicyFile, Line: line}, why)
	}
	p := &Policy{file: PolicyFile}
	if err := sigsyaml.UnmarshalStrict(b, p); err != nil {
		return nil, verify.InputErrorf("%s: %v: see docs/policy.md for the fields", PolicyFile, err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err == nil && len(doc.Content) > 0 {
		p.root = doc.Content[0]
	}
	return p, p.validate()
}

func (p *Policy) validate() error {
	bad := func(at, format string, a ...any) error {
		return verify.InputErrorf("%s: %s", p.where(strings.Split(at, ".")...), fmt.Sprintf(format, a...))
	}
	if p.Version != 1 {
		return bad("version", "version %d: this tool reads version: 1", p.Version)
	}
	if v := p.DefaultOperators.OnUndefined; v != "" && v != "advisory" && v != "fail" {
		return bad("defaultOperators.onUndefined", "onUndefined %q: advisory (the default) or fail", v)
	}
	for i, a := range p.DefaultOperators.Allow {
		at := fmt.Sprintf("defaultOperators.allow.%d", i)
		if len(a.Names) == 0 || strings.TrimSpace(a.Reason) == "" {
			return bad(at, "an allow entry needs names and a reason")
		}
		for _, n := range a.Names {
			if _, err := path.Match(n, ""); err != nil {
				return bad(at, "name pattern %q: %v (path.Match syntax: * ? [a-z])", n, err)
			}
		}
	}
	if v := p.Prerequisites.Undeclared; v != "" && v != "warn" && v != "fail" {
		return bad("prerequisites.undeclared", "undeclared %q: warn (the default) or fail", v)
	}
	for i, d := range p.Prerequisites.Declared {
		at := fmt.Sprintf("prerequisites.declared.%d", i)
		if d.Kind != "ConfigMap" && d.Kind != "Secret" {
			return bad(at, "kind %q: ConfigMap or Secret", d.Kind)
		}
		if d.Name == "" || d.Namespace == "" || strings.TrimSpace(d.CreatedBy) == "" {
			return bad(at, "a declared prerequisite needs name, namespace and createdBy (what makes it)")
		}
	}
	for i, o := range p.Advisories.Disable {
		if r := detectorRow(o.Detector); r == nil || !r.Advisory || strings.TrimSpace(o.Reason) == "" {
			return bad(fmt.Sprintf("advisories.disable.%d", i), "detector %q: one of %v, with a reason", o.Detector, advisoryDetectors())
		}
	}
	if v := p.OtherSources; v != "" && v != "note" && v != "required" {
		return bad("otherSources", "otherSources %q: note (the default) or required", v)
	}
	return nil
}

// where is file:line of the node at the dotted path (list items by index).
func (p *Policy) where(keys ...string) string {
	loc := fluxrepo.Location{File: p.file}
	n := p.root
	for _, k := range keys {
		if n == nil {
			break
		}
		loc.Line = n.Line
		switch n.Kind {
		case yaml.MappingNode:
			var next *yaml.Node
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == k {
					next = n.Content[i+1]
					loc.Line = n.Content[i].Line
				}
			}
			n = next
		case yaml.SequenceNode:
			var i int
			if _, err := fmt.Sscan(k, &i); err != nil || i >= len(n.Content) {
				n = nil
				break
			}
			n = n.Content[i]
			loc.Line = n.Line
		default:
			n = nil
		}
	}
	return loc.String()
}

// prerequisite is the declared prerequisite with key (fluxrepo.DataKey),
// as the data the check substitutes from, or nil.
func (p *Policy) prerequisite(key string) *fluxrepo.Data {
	if p == nil {
		return nil
	}
	for i, d := range p.Prerequisites.Declared {
		if fluxrepo.DataKey(d.Kind, d.Namespace, d.Name) != key {
			continue
		}
		data := &fluxrepo.Data{Kind: d.Kind, Namespace: d.Namespace, Name: d.Name, Values: map[string]string{},
			MadeBy: fmt.Sprintf("%s (declared in %s, made by %s)", key, p.where("prerequisites", "declared", fmt.Sprint(i)), d.CreatedBy)}
		for _, k := range d.Keys {
			data.Values[k] = fluxrepo.PrerequisiteValue
		}
		// Declared without keys: any key may be there.
		data.Open = len(d.Keys) == 0
		return data
	}
	if o := p.seededBy(key); o != nil {
		data := &fluxrepo.Data{Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, Values: map[string]string{}, Open: o.Open,
			MadeBy: fmt.Sprintf("%s (created before Flux by the repository's bootstrap: %s at %s)", key, o.How, o.Location)}
		for _, k := range o.Keys {
			data.Values[k] = fluxrepo.PrerequisiteValue
		}
		return data
	}
	return nil
}

// withBootstrap is the policy (a copy; the defaults when p is nil) with
// what the repository's bootstrap creates before Flux as prerequisites.
func (p *Policy) withBootstrap(b *bootstrapfiles.Bootstrap) *Policy {
	if b.Empty() {
		return p
	}
	c := &Policy{}
	if p != nil {
		*c = *p
	}
	c.seeded = b
	return c
}

// declares says PolicyFile's prerequisites.declared lists key.
func (p *Policy) declares(key string) bool {
	return p != nil && slices.ContainsFunc(p.Prerequisites.Declared, func(d DeclaredPrerequisite) bool {
		return fluxrepo.DataKey(d.Kind, d.Namespace, d.Name) == key
	})
}

// fromFile says the policy was read from PolicyFile.
func (p *Policy) fromFile() bool { return p != nil && p.file != "" }

// seededBy is the object with key the repository's bootstrap creates
// before Flux (nil: none).
func (p *Policy) seededBy(key string) *bootstrapfiles.Object {
	if p == nil {
		return nil
	}
	return p.seeded.Object(key)
}

// apply is the policy's word on one finding: it may allow it (allowed is
// then the reason), make a warning a failure, or leave it.
func (p *Policy) apply(f *finding) (allowed string) {
	if p == nil {
		return ""
	}
	if f.Detector == DefaultOp {
		for i, a := range p.DefaultOperators.Allow {
			for _, n := range a.Names {
				if ok, _ := path.Match(n, f.name); ok && f.name != "" {
					return fmt.Sprintf("allowed by %s (%s)", p.where("defaultOperators", "allow", fmt.Sprint(i)), a.Reason)
				}
			}
		}
		if f.warn() && p.DefaultOperators.OnUndefined == "fail" {
			f.Verdict = verify.Fail
			f.Policy = "required by policy: " + p.where("defaultOperators", "onUndefined") + " onUndefined: fail"
		}
	}
	if f.Detector == Prerequisite && f.warn() && p.Prerequisites.Undeclared == "fail" {
		f.Verdict = verify.Fail
		f.Policy = "required by policy: " + p.where("prerequisites", "undeclared") + " undeclared: fail (declare it under prerequisites.declared)"
	}
	if f.warn() {
		for i, o := range p.Advisories.Disable {
			if o.Detector == f.Detector {
				return fmt.Sprintf("allowed by %s (advisory off: %s)", p.where("advisories", "disable", fmt.Sprint(i)), o.Reason)
			}
		}
	}
	return ""
}
