// Package fluxrelease finds the Flux release an environment deploys: the one
// its controllers run, so the one whose CRDs and controller defaults judge
// its objects. In order: an explicit choice (--flux-version, --versions-file),
// then what the repository declares, then the tool's default. Deployed
// adds kustomize-controller as the environment deploys it there (its
// strictness and watch), which check judges by and diff renders by.
//
// The forms a repository declares its release in (DESIGN §10):
//   - a FluxInstance's spec.distribution.version (a semver range: the Flux
//     Operator installs the newest release in it) and .artifact (a
//     flux-operator-manifests tag: the releases that operator release ships),
//     also as flux-instance chart values (instance.distribution);
//   - flux bootstrap's gotk-components.yaml header "# Flux Version: v2.x.y";
//   - a kustomize remote base github.com/fluxcd/flux2/manifests/install?ref=v…;
//   - an OCIRepository of oci://ghcr.io/fluxcd/flux-manifests, or a
//     GitRepository of https://github.com/fluxcd/flux2, that a Kustomization
//     of the environment applies: its ref field of highest precedence
//     (ref.tag a release, ref.semver a range; a digest, commit or name pins
//     a release not known offline).
//
// A field of a rendered object is read as the cluster gets it: after the
// post-build substitution of the Kustomization applying it
// (fluxrepo.Env.Applied, the controller's own SubstituteVariables), said
// so with where each variable came from. A release not embedded is judged
// by the newest embedded release of its minor, else the nearest below it.
package fluxrelease

import (
	"bytes"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/Masterminds/semver/v3"
	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/resource"

	"github.com/homelab-ops/bootstrap/internal/bootstrapfiles"
	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
)

// Where a release was taken from.
const (
	FromFlag       = "flag"
	FromRepository = "repository"
	FromDefault    = "default"
)

// Release is the Flux release an environment is judged by, and why.
type Release struct {
	// Version is the embedded release judged by; "" when Old.
	Version string `json:"version,omitempty"`
	// Declared is the release (or range, or operator tag) as written.
	Declared string `json:"declared,omitempty"`
	// From is FromFlag, FromRepository or FromDefault.
	From string `json:"from"`
	// Form says how the repository declares it (FromRepository only).
	Form     string            `json:"form,omitempty"`
	Location fluxrepo.Location `json:"location,omitempty"`
	// Old: the declared release is older than every embedded one (v0.x,
	// before v2.2.3): this build has neither its CRDs nor its controllers.
	Old bool `json:"old,omitempty"`
	// Operator is where a FluxInstance manages the cluster (nil: none
	// does): the Flux Operator then installs the CRDs with its changes.
	Operator *fluxrepo.Location `json:"operator,omitempty"`
	// Notes are what a person should know (other declarations, a release
	// not embedded and the one taken instead).
	Notes []string `json:"notes,omitempty"`
	// Fallback: the repository declares a release (Declared, Form,
	// Location) this build does not resolve; Version is the default.
	Fallback bool `json:"fallback,omitempty"`
	// Fails is the controller's verdict on a declaration it refuses (the
	// Flux Operator does not parse the range, or finds no release of it in
	// its artifact); "": none. Fix says what to change.
	Fails string `json:"fails,omitempty"`
	Fix   string `json:"fix,omitempty"`
	// Written is the declaring field as written when the applying
	// Kustomization's post-build substitution changed it (Declared is then
	// the value the cluster gets, or Written again when a Secret gave it);
	// SubstitutedBy names that Kustomization (namespace/name).
	Written       string `json:"written,omitempty"`
	SubstitutedBy string `json:"substitutedBy,omitempty"`
	// Judged says why Version stands for a declared release this build
	// does not embed ("": Version is the one declared, or a range's).
	Judged string `json:"judged,omitempty"`
	// Unresolved says why a Fallback declaration names no release offline
	// (a variable left as written, or rendered empty); "": it names one
	// this build does not embed.
	Unresolved string `json:"unresolved,omitempty"`
}

// String is the release as a one-line fact.
func (r Release) String() string {
	switch r.From {
	case FromFlag:
		return fmt.Sprintf("Flux %s (%s)", r.Version, r.Declared)
	case FromDefault:
		return fmt.Sprintf("Flux %s (the default: the repository declares no release)", r.Version)
	}
	if r.Old {
		return fmt.Sprintf("Flux %s, declared by %s at %s: older than the releases embedded in this build", r.Declared, r.Form, r.Location)
	}
	if r.Fallback && r.Unresolved != "" {
		return fmt.Sprintf("Flux %s, the default: %s %q declared at %s names no release known offline: %s", r.Version, r.Form, r.Declared, r.Location, r.Unresolved)
	}
	if r.Fallback {
		return fmt.Sprintf("Flux %s, the default: %s %q declared at %s is not embedded in this build", r.Version, r.Form, r.Declared, r.Location)
	}
	s := fmt.Sprintf("Flux %s, declared by %s", r.Version, r.Form)
	switch {
	case r.Written != "":
		s += fmt.Sprintf(" %q", r.Written)
	case r.Declared != r.Version || r.SubstitutedBy != "":
		s += fmt.Sprintf(" %q", r.Declared)
	}
	s += " at " + r.Location.String()
	switch {
	case r.SubstitutedBy != "" && r.Written != "":
		s += fmt.Sprintf(" (%q after Kustomization %s's post-build substitution)", r.Declared, r.SubstitutedBy)
	case r.SubstitutedBy != "":
		s += fmt.Sprintf(" (after Kustomization %s's post-build substitution)", r.SubstitutedBy)
	}
	if r.Judged != "" {
		s += ": " + r.Judged
	}
	return s
}

// Options are the choices and tables Resolve takes.
type Options struct {
	// Explicit is the release given on the command line (or through
	// --versions-file, the environment); ExplicitFrom says how, for the fact.
	Explicit, ExplicitFrom string
	// Default is the tool's release (versions.env FLUX_VERSION).
	Default string
	// Embedded are the releases whose bundles this build carries.
	Embedded []string
	// OperatorMaxFlux maps a Flux Operator release to the newest Flux it
	// ships (versions.env FLUX_OPERATOR_MAX_FLUX).
	OperatorMaxFlux map[string]string
	// Bootstrap are the Flux installs the repository's own bootstrap
	// applies before Flux runs (bootstrapfiles: a Taskfile's kubectl apply
	// of flux2's install): declarations of the form FormBootstrap.
	Bootstrap []bootstrapfiles.Install
}

// declaration is one place the repository names its release.
type declaration struct {
	form     string
	value    string // as the cluster gets it (after substitution)
	loc      fluxrepo.Location
	rangeOf  bool   // value is a semver range (FluxInstance version)
	maxFlux  string // the newest release the operator artifact ships
	artifact string // the operator tag
	// operator: a FluxInstance's (or its chart's) distribution, which the
	// Flux Operator resolves.
	operator bool
	// written is the field as written when the applying Kustomization's
	// substitution (substitutedBy) made value of it; how says where its
	// variables came from; secret: a Secret's value (value not shown).
	written, substitutedBy, how string
	secret                      bool
	// unresolved says why value still holds a variable (or one rendered
	// it empty); literal: the cluster gets it as written all the same.
	unresolved string
	literal    bool
}

// shown is the value as a report may show it: a Secret's value is not.
func (d declaration) shown() string {
	if d.secret && d.written != "" {
		return d.written
	}
	return d.value
}

// Resolve finds the release env deploys.
func Resolve(env *fluxrepo.Env, o Options) Release {
	decls, op := declarations(env, o)
	r := Release{Operator: op}
	switch {
	case o.Explicit != "":
		r.Version, r.From, r.Declared = o.Explicit, FromFlag, o.ExplicitFrom
		if r.Declared == "" {
			r.Declared = "--flux-version"
		}
		if len(decls) > 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("%s overrides %s %q at %s", r.Declared, decls[0].form, decls[0].shown(), decls[0].loc))
		}
		return r
	case len(decls) == 0:
		r.Version, r.From = o.Default, FromDefault
		return r
	}
	// The first declaration that resolves judges (a tag "latest" or an
	// unsubstituted ${FLUX_VERSION} does not hide a later one); none does:
	// the first, judged by the default. A range the operator fails stays
	// the verdict: the operator acts on it whatever else is declared.
	pick := 0
	for i, c := range decls {
		if v, old, _ := c.resolve(o); v != "" || old || c.refusal() != (refusal{}) {
			pick = i
			break
		}
	}
	d := decls[pick]
	r.From, r.Form, r.Declared, r.Location = FromRepository, d.form, d.shown(), d.loc
	if d.substitutedBy != "" {
		r.SubstitutedBy = d.substitutedBy
		if !d.secret {
			r.Written = d.written
			r.Notes = append(r.Notes, fmt.Sprintf("%s %q at %s is %q after post-build substitution by Kustomization %s, which applies it (fluxcd/pkg/kustomize SubstituteVariables over the repository's data): %s", d.form, d.written, d.loc, d.value, d.substitutedBy, d.how))
		} else {
			r.Notes = append(r.Notes, fmt.Sprintf("%s %q at %s is substituted by Kustomization %s, which applies it: %s", d.form, d.written, d.loc, d.substitutedBy, d.how))
		}
	}
	for i, other := range decls {
		switch {
		case i < pick:
			_, _, why := other.resolve(o)
			r.Notes = append(r.Notes, fmt.Sprintf("%s %q at %s: %s; judged by %s at %s instead", other.form, other.shown(), other.loc, why, d.form, d.loc))
		case i > pick && other.value != d.value:
			r.Notes = append(r.Notes, fmt.Sprintf("%s %q at %s is not the one judged by: %s at %s declares the release the cluster root deploys", other.form, other.shown(), other.loc, d.form, d.loc))
		}
	}
	v, old, note := d.resolve(o)
	switch {
	case old:
		r.Old = true
	case v == "":
		// Still the repository's declaration: the report says it was
		// not resolved, and what the controller makes of it.
		r.Version, r.Fallback = o.Default, true
		if f := d.refusal(); f != (refusal{}) {
			r.Fails, r.Fix = f.why, f.fix
		}
		if d.unresolved != "" && r.Fails == "" {
			// Said in the message; the note would repeat it.
			r.Unresolved = d.unresolved
			return r
		}
		r.Notes = append(r.Notes, fmt.Sprintf("%s %q at %s: %s; judged by the default Flux %s", d.form, d.shown(), d.loc, note, o.Default))
		return r
	default:
		r.Version = v
		if note != "" && !d.rangeOf {
			r.Judged = note
		} else if note != "" {
			r.Notes = append(r.Notes, note)
		}
		if d.rangeOf {
			// flux-operator v0.54.0 on (v0.58.1
			// internal/controller/fluxinstance_controller.go build →
			// internal/builder/semver.go MatchVersionWithEmbedded) also
			// keeps to the minors its own image embeds; which operator
			// runs is not declared here.
			r.Notes = append(r.Notes, fmt.Sprintf("the running Flux Operator matches the range only among the Flux minors its image embeds (flux-operator v0.54.0 and later): an operator older than Flux %s installs the newest minor it knows", v))
		}
	}
	return r
}

// resolve is the embedded release a declaration stands for: the newest in
// its range (and at most what its operator artifact ships), or the exact
// release; old when it is older than every embedded one; "" and why when
// none fits.
func (d declaration) resolve(o Options) (version string, old bool, note string) {
	if d.unresolved != "" {
		return "", false, d.unresolved
	}
	embedded := sortedVersions(o.Embedded)
	if len(embedded) == 0 {
		return "", false, "no release is embedded in this build"
	}
	oldest := embedded[0]
	var limit *semver.Version
	if d.maxFlux != "" {
		limit, _ = semver.NewVersion(d.maxFlux)
	}
	if d.rangeOf {
		// The Flux Operator's own rule (flux-operator v0.58.1
		// internal/controller/fluxinstance_controller.go build →
		// internal/builder/semver.go MatchVersionWithEmbedded): Masterminds
		// semver constraint, newest release of the artifact's data
		// directory matching it (of a minor the running image embeds: a
		// note, see Resolve).
		c, err := semver.NewConstraint(d.value)
		if err != nil {
			if f := d.refusal(); f != (refusal{}) {
				return "", false, f.why
			}
			return "", false, fmt.Sprintf("not a semver range (%v)", err)
		}
		if !satisfiable(c, d.value) {
			if f := d.refusal(); f != (refusal{}) {
				return "", false, f.why
			}
			return "", false, "no release at all satisfies the range"
		}
		for _, v := range slices.Backward(embedded) {
			if (limit == nil || !v.GreaterThan(limit)) && c.Check(v) {
				return v.Original(), false, ""
			}
		}
		// Nothing embedded matches: a range below them all is a release
		// older than the embedded ones.
		if lo := rangeFloor(d.value); lo != nil && lo.LessThan(oldest) {
			return "", true, ""
		}
		if limit != nil && limit.LessThan(oldest) {
			return "", true, ""
		}
		if f := d.refusal(); f != (refusal{}) {
			return "", false, f.why
		}
		return "", false, "no embedded release matches it"
	}
	v, err := semver.NewVersion(d.value)
	if err != nil {
		return "", false, fmt.Sprintf("not a release version (%v)", err)
	}
	for _, e := range embedded {
		if e.Equal(v) {
			return e.Original(), false, ""
		}
	}
	// A release this build does not carry, of a minor it does: that
	// minor's newest embedded release (a minor's patch releases serve the
	// same API versions; issue 45: v2.2.2 is judged by v2.2.3). A minor
	// is the same only within the same major (v3.2 is not v2.2).
	same := func(e *semver.Version) bool { return e.Major() == v.Major() && e.Minor() == v.Minor() }
	for _, e := range slices.Backward(embedded) {
		if !same(e) {
			continue
		}
		return e.Original(), false, fmt.Sprintf("Flux %s is not embedded in this build: judged by %s, the newest embedded release of Flux %d.%d (its patch releases serve the same API versions)", d.shown(), e.Original(), v.Major(), v.Minor())
	}
	if v.LessThan(oldest) {
		return "", true, ""
	}
	// Of a minor not embedded: the newest embedded release below it.
	var best *semver.Version
	for _, e := range embedded {
		if !e.GreaterThan(v) {
			best = e
		}
	}
	if best == nil {
		return "", false, "no embedded release is at or below it"
	}
	return best.Original(), false, fmt.Sprintf("Flux %s is not embedded in this build, nor any release of Flux %d.%d: judged by %s, the nearest embedded release below it", d.shown(), v.Major(), v.Minor(), best.Original())
}

// refusal is the Flux Operator's verdict on a FluxInstance declaration it
// refuses, and the fix; zero: it does not refuse it (or it is not known).
type refusal struct{ why, fix string }

// refusal says whether the Flux Operator refuses d, in its words. The
// FluxInstance controller resolves spec.distribution.version with
// Masterminds semver (flux-operator v0.59.0
// internal/controller/fluxinstance_controller.go build →
// internal/builder/semver.go MatchVersionWithEmbedded → matchVersions,
// semver.NewConstraint): a range it cannot parse fails the build, Ready
// False, BuildFailed, stalled ("build failed: semver '<range>' parse
// error: <the library's error>"); a range no release of its data matches
// fails it too ("no match found for semver: <range> …"). The library's
// own error is quoted, not the operator's code.
func (d declaration) refusal() refusal {
	if !d.rangeOf || (d.unresolved != "" && !d.literal) {
		return refusal{}
	}
	if !d.operator {
		return d.sourceRefusal()
	}
	c, err := semver.NewConstraint(d.value)
	switch {
	case err != nil:
		return refusal{
			why: fmt.Sprintf("the Flux Operator does not parse it as a semver range and fails the FluxInstance (BuildFailed: \"build failed: semver '%s' parse error: %v\")", d.value, err),
			fix: `write a range the Masterminds semver library parses, such as "2.x" or "2.7.x"`,
		}
	case !satisfiable(c, d.value):
		return refusal{
			why: fmt.Sprintf("no release at all satisfies the range: the Flux Operator finds none in its data and fails the FluxInstance (\"no match found for semver: %s\")", d.value),
			fix: `write a range a release satisfies, such as "2.x" or "2.7.x"`,
		}
	case d.exceedsArtifact():
		return refusal{
			why: fmt.Sprintf("flux-operator-manifests:%s ships Flux up to %s and no release of it matches the range: the Flux Operator fails the FluxInstance (\"no match found for semver: %s\")", d.artifact, d.maxFlux, d.value),
			fix: "name an operator artifact that ships the range, or a range its releases match",
		}
	}
	return refusal{}
}

// sourceRefusal is source-controller's verdict on a ref.semver (of the
// flux-manifests OCIRepository or the flux2 GitRepository) it cannot
// parse: the source fails, so the release is never fetched.
// source-controller v1.9.5 internal/controller/ocirepository_controller.go
// getTagBySemver ("semver '%s' parse error"); fluxcd/pkg/git v0.52.0
// gogit/clone.go cloneSemVer ("semver parse error"); both Masterminds
// semver's NewConstraint. Which tags exist is not known offline: a range
// that parses is not judged.
func (d declaration) sourceRefusal() refusal {
	_, err := semver.NewConstraint(d.value)
	if err == nil {
		return refusal{}
	}
	why := fmt.Sprintf("source-controller does not parse it as a semver range and fails the OCIRepository (\"semver '%s' parse error: %v\"): the release is never fetched", d.value, err)
	if strings.HasPrefix(d.form, "GitRepository") {
		why = fmt.Sprintf("source-controller does not parse it as a semver range and fails the GitRepository (\"semver parse error: %v\"): the release is never fetched", err)
	}
	return refusal{why: why, fix: `write a range the Masterminds semver library parses, such as "2.x" or ">=2.7.0 <2.8.0"`}
}

var numberRe = regexp.MustCompile(`\d+`)

// satisfiableBudget bounds satisfiable's work (candidates × the range's
// length): well under a second.
const satisfiableBudget = 1 << 22

// satisfiable says whether some release (no prerelease) satisfies c, the
// constraint r parses to. A comparison's bounds are the numbers r names
// (and the next ones: ~2.3 ends before 2.4.0, ^2.3 before 3.0.0), so if a
// release satisfies c, one whose every part is 0 or one of those numbers
// -1, +0, +1, +2 does.
func satisfiable(c *semver.Constraints, r string) bool {
	parts := map[uint64]bool{0: true}
	for _, m := range numberRe.FindAllString(r, -1) {
		n, err := strconv.ParseUint(m, 10, 32)
		if err != nil {
			return true // not decided here
		}
		for _, p := range []uint64{n, n + 1, n + 2} {
			parts[p] = true
		}
		if n > 0 {
			parts[n-1] = true
		}
	}
	// The candidates are cubic in the numbers named, each tried against
	// the whole range: a range naming dozens (a repository's file may
	// hold anything; 20 comparisons took 12 s) is not decided here.
	if n := len(parts); n*n*n*len(r) > satisfiableBudget {
		return true
	}
	for major := range parts {
		for minor := range parts {
			for patch := range parts {
				if c.Check(semver.New(major, minor, patch, "", "")) {
					return true
				}
			}
		}
	}
	return false
}

// exceedsArtifact says whether d is a range whose operator artifact ships no
// release of it: the range starts above the newest release the artifact
// ships. The Flux Operator matches the range among the artifact's releases
// only (flux-operator v0.58.1 internal/controller/fluxinstance_controller.go
// build, internal/builder/semver.go MatchVersionWithEmbedded) and fails the
// FluxInstance with "no match found for semver".
func (d declaration) exceedsArtifact() bool {
	if !d.rangeOf || d.maxFlux == "" {
		return false
	}
	limit, err := semver.NewVersion(d.maxFlux)
	if err != nil {
		return false
	}
	c, err := semver.NewConstraint(d.value)
	if err != nil {
		return false
	}
	// Every release up to limit of limit's major: does one match?
	for minor := int64(0); minor <= int64(limit.Minor()); minor++ {
		for patch := int64(0); patch <= 20; patch++ {
			v := semver.New(limit.Major(), uint64(minor), uint64(patch), "", "")
			if !v.GreaterThan(limit) && c.Check(v) {
				return false
			}
		}
	}
	lo := rangeFloor(d.value)
	return lo != nil && lo.GreaterThan(limit)
}

var floorRe = regexp.MustCompile(`\d+(\.(\d+|[xX*]))?(\.(\d+|[xX*]))?`)

// rangeFloor is the first version a range names, wildcards as 0 ("2.1.x"
// is 2.1.0).
func rangeFloor(r string) *semver.Version {
	m := floorRe.FindString(r)
	if m == "" {
		return nil
	}
	m = strings.NewReplacer("x", "0", "X", "0", "*", "0").Replace(m)
	v, err := semver.NewVersion(m)
	if err != nil {
		return nil
	}
	return v
}

func sortedVersions(vs []string) []*semver.Version {
	var out []*semver.Version
	for _, s := range vs {
		if v, err := semver.NewVersion(s); err == nil {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b *semver.Version) int { return a.Compare(b) })
	return out
}

// The declaration forms, as the report names them.
const (
	FormInstanceVersion  = "FluxInstance spec.distribution.version"
	FormInstanceArtifact = "FluxInstance spec.distribution.artifact"
	FormHeader           = "flux bootstrap's gotk-components.yaml header"
	FormRemoteBase       = "the kustomize remote base github.com/fluxcd/flux2/manifests/install"
	FormOCIManifests     = "OCIRepository oci://ghcr.io/fluxcd/flux-manifests ref.tag"
	FormGitFlux2         = "GitRepository https://github.com/fluxcd/flux2 ref.tag"
	// FormBootstrap: the Flux install the repository's bootstrap applies
	// outside Flux (DESIGN §12), e.g. a Taskfile's kubectl apply --kustomize
	// of a kustomization of github.com/fluxcd/flux2/manifests/install?ref=vX.
	FormBootstrap = "the Flux install the repository's bootstrap applies"
)

// OperatorManifests is the repository of the Flux Operator's release data
// (a FluxInstance spec.distribution.artifact names a tag of it).
const OperatorManifests = "ghcr.io/controlplaneio-fluxcd/flux-operator-manifests"

var (
	headerRe     = regexp.MustCompile(`^#\s*Flux Version:\s*(v?\d+\.\d+\.\d+\S*)`)
	remoteBaseRe = regexp.MustCompile(`github\.com/fluxcd/flux2/+manifests/install/?\?ref=(v?\d+\.\d+\.\d+[^\s"'&]*)`)
)

// declarations lists every declaration of the environment, the one the
// root depends on first: the FluxInstance (or chart values) declaring the
// root, then what the root directory renders, then what its Kustomizations
// render, then the files their builds read. op is where a FluxInstance
// manages the cluster.
func declarations(env *fluxrepo.Env, o Options) (out []declaration, op *fluxrepo.Location) {
	seen := map[string]int{}
	add := func(ds ...declaration) {
		for _, d := range ds {
			key := d.form + "@" + d.loc.String()
			i, ok := seen[key]
			switch {
			case !ok:
				seen[key] = len(out)
				out = append(out, d)
			case out[i].unresolved != "" && !out[i].literal && (d.substitutedBy != "" || d.literal):
				// The file read as written (the FluxInstance declaring
				// the root, applied first from outside) is one a
				// Kustomization of the environment applies too: what
				// it makes of the variable is what the cluster keeps.
				out[i] = d
			}
		}
	}
	if og := env.Origin; og.Layout == fluxrepo.LayoutFluxInstance {
		loc := og.Location
		op = &loc
		add(instanceAt(env, og.Location, o)...)
	}
	// Each build with the Kustomization applying it (nil: the root
	// directory, when no root Kustomization applies it), whose post-build
	// substitution the declaring fields go through.
	type built struct {
		files []string
		res   []*resource.Resource
		by    *fluxrepo.Kustomization
	}
	var rootBy *fluxrepo.Kustomization
	if rk := env.Root; rk != nil && rk.Built && len(rk.Resources) == len(env.RootResources) && (len(rk.Resources) == 0 || rk.Resources[0] == env.RootResources[0]) {
		rootBy = rk
	}
	all := []built{{files: env.RootFiles, res: env.RootResources, by: rootBy}}
	for _, k := range env.Kustomizations {
		if k.Built {
			all = append(all, built{files: k.Files, res: k.Resources, by: k})
		}
	}
	for _, b := range all {
		for _, r := range b.res {
			if !declares[r.GetKind()] {
				continue // not substituted for nothing: the builds are large
			}
			ds, manages := fromObject(env, b.files, newApplier(env, b.by, r), o)
			if manages && op == nil {
				l := env.Locate(b.files, r.GetKind(), r.GetNamespace(), r.GetName())
				op = &l
			}
			add(ds...)
		}
	}
	// The files the builds read, and the kustomization files of paths
	// that were not built (a remote base is never built offline).
	files := slices.Clone(env.RootFiles)
	for _, k := range env.Kustomizations {
		files = append(files, k.Files...)
		for _, n := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
			files = append(files, path.Join(k.Path, n))
		}
	}
	slices.Sort(files)
	for _, f := range slices.Compact(files) {
		add(fromFile(env, f)...)
	}
	// Last: the controllers the bootstrap installs run until the tree
	// applies a release of its own (a declaration above).
	for _, in := range o.Bootstrap {
		d := declaration{form: FormBootstrap + " (" + in.How + ")", value: in.Version, loc: in.Location}
		if i := slices.IndexFunc(out, func(o declaration) bool { return o.form == FormRemoteBase && o.loc == in.Location }); i >= 0 {
			out[i].form = d.form // the same line, read by the tree's files too
			continue
		}
		add(d)
	}
	return out, op
}

// fromFile reads the declarations only a file's text carries.
func fromFile(env *fluxrepo.Env, f string) []declaration {
	var out []declaration
	lines := env.FileLines(f)
	header := path.Base(f) == fluxrepo.ControllersFile
	for i, l := range lines {
		if header && i < 20 {
			if m := headerRe.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
				out = append(out, declaration{form: FormHeader, value: m[1], loc: fluxrepo.Location{File: f, Line: i + 1}})
			}
		}
		if m := remoteBaseRe.FindStringSubmatch(l); m != nil && !strings.HasPrefix(strings.TrimSpace(l), "#") {
			out = append(out, declaration{form: FormRemoteBase, value: m[1], loc: fluxrepo.Location{File: f, Line: i + 1}})
		}
	}
	return out
}

// declares are the kinds fromObject reads.
var declares = map[string]bool{"FluxInstance": true, fluxobj.HelmReleaseKind: true, "OCIRepository": true, "GitRepository": true}

// fromObject reads the declarations of one rendered object, as its
// applier's post-build substitution renders it, and whether it is a
// FluxInstance managing the cluster (a FluxInstance, or flux-instance
// chart values).
func fromObject(env *fluxrepo.Env, files []string, a applier, o Options) ([]declaration, bool) {
	r := a.sub
	kind, api := r.GetKind(), r.GetApiVersion()
	m, err := r.Map()
	if err != nil {
		return nil, false
	}
	raw, err := a.raw.Map()
	if err != nil {
		return nil, false
	}
	// Located by the text as written, under the name as written.
	locate := func(text string) fluxrepo.Location {
		decl := env.Locate(files, a.raw.GetKind(), a.raw.GetNamespace(), a.raw.GetName())
		if l := env.FindInObject(files, decl, text); l.File != "" && (decl.File == "" || l.File == decl.File) {
			return l
		}
		return decl
	}
	switch {
	case kind == "FluxInstance" && strings.HasPrefix(api, "fluxcd.controlplane.io/"):
		return distribution(a, mapAt(raw, "spec", "distribution"), mapAt(m, "spec", "distribution"), locate, o), true
	case kind == fluxobj.HelmReleaseKind && fluxobj.InGroup(api, fluxobj.HelmGroup):
		inst := mapAt(m, "spec", "values", "instance")
		if inst == nil || (inst["distribution"] == nil && inst["sync"] == nil) {
			return nil, false
		}
		return distribution(a, mapAt(raw, "spec", "values", "instance", "distribution"), mapAt(inst, "distribution"), locate, o), true
	case kind == "OCIRepository" && fluxobj.InGroup(api, fluxobj.SourceGroup):
		url, _ := mapAt(m, "spec")["url"].(string)
		if strings.TrimSuffix(url, "/") != "oci://ghcr.io/fluxcd/flux-manifests" || !applied(env, kind, r) {
			return nil, false
		}
		return refDeclaration(a, FormOCIManifests, mapAt(raw, "spec", "ref"), mapAt(m, "spec", "ref"), locate, "digest", "semver", "tag"), false
	case kind == "GitRepository" && fluxobj.InGroup(api, fluxobj.SourceGroup):
		url, _ := mapAt(m, "spec")["url"].(string)
		url = strings.TrimSuffix(strings.TrimSuffix(url, "/"), ".git")
		if url != "https://github.com/fluxcd/flux2" || !applied(env, kind, r) {
			return nil, false
		}
		return refDeclaration(a, FormGitFlux2, mapAt(raw, "spec", "ref"), mapAt(m, "spec", "ref"), locate, "commit", "name", "semver", "tag"), false
	}
	return nil, false
}

// refDeclaration is the declaration of a source's ref: the first of fields
// (highest precedence first) set after substitution (sub), read with what
// is written (raw). source-controller checks out the field of highest
// precedence: OCIRepository digest, semver, tag (source-controller v1.9.x
// internal/controller/ocirepository_controller.go getArtifactRef);
// GitRepository commit, name, semver, tag (api/v1 GitRepositoryRef, "takes
// precedence over"); a field a variable renders empty is not set. A
// semver is a range, a tag a release; a digest, commit or name pins a
// release that is not known offline (it resolves to none: the default,
// said so). When no field is set after substitution, a field written with
// a variable that rendered empty is the declaration (unresolved, said so).
func refDeclaration(a applier, tagForm string, raw, sub map[string]any, locate func(string) fluxrepo.Location, fields ...string) []declaration {
	field := ""
	for _, f := range fields {
		if v, _ := sub[f].(string); v != "" {
			field = f
			break
		}
	}
	if field == "" {
		for _, f := range fields {
			if v, _ := raw[f].(string); strings.Contains(v, "${") {
				field = f
				break
			}
		}
	}
	if field == "" {
		return nil
	}
	w, _ := raw[field].(string)
	v, _ := sub[field].(string)
	if w == "" {
		w = v // set by substitution of an enclosing value
	}
	d := declaration{form: strings.TrimSuffix(tagForm, "tag") + field, rangeOf: field == "semver", loc: locate(w)}
	a.settle(&d, w, v)
	if field != "tag" && field != "semver" {
		d.form += " (it takes precedence over ref.tag; the release it pins is not known offline)"
	}
	return []declaration{d}
}

// applied says whether a Kustomization of the environment applies the
// source r (reads it: its spec.sourceRef names it).
func applied(env *fluxrepo.Env, kind string, r *resource.Resource) bool {
	for _, k := range env.Kustomizations {
		ref := fluxobj.KustomizationSource(k.Kustomization)
		if ref.Kind == kind && ref.Name == r.GetName() && ref.Namespace == fluxobj.NamespaceOr(r.GetNamespace(), ref.Namespace) {
			return true
		}
	}
	return false
}

// distribution reads a FluxInstance's spec.distribution (or the chart's
// instance.distribution), as written (raw) and as a applies it (dist).
func distribution(a applier, raw, dist map[string]any, locate func(string) fluxrepo.Location, o Options) []declaration {
	if dist == nil {
		return nil
	}
	version, _ := dist["version"].(string)
	artifact, _ := dist["artifact"].(string)
	rawVersion, _ := raw["version"].(string)
	if rawVersion == "" {
		rawVersion = version
	}
	d := declaration{form: FormInstanceVersion, rangeOf: true, operator: true}
	a.settle(&d, rawVersion, version)
	if version == "" && rawVersion == "" {
		d.value = "*" // every release the artifact ships
	}
	if tag, ok := strings.CutPrefix(artifact, "oci://"+OperatorManifests+":"); ok {
		d.artifact = tag
		if max, ok := o.OperatorMaxFlux["v"+strings.TrimPrefix(tag, "v")]; ok {
			d.maxFlux = max
			d.form = fmt.Sprintf("%s (flux-operator-manifests:%s ships Flux up to %s)", FormInstanceArtifact, tag, max)
		} else {
			d.form = fmt.Sprintf("%s (flux-operator-manifests:%s is not in this build's table of operator releases: the version range alone decides)", FormInstanceArtifact, tag)
		}
	}
	rawArtifact, _ := raw["artifact"].(string)
	switch {
	case rawVersion != "":
		d.loc = locate(rawVersion)
	case rawArtifact != "":
		d.loc = locate(rawArtifact)
	case artifact != "":
		d.loc = locate(artifact)
	default:
		return nil
	}
	return []declaration{d}
}

// instanceAt reads the distribution of the FluxInstance (or chart values)
// whose spec.sync is at loc (the root's declaration, maybe a values file
// no Kustomization renders).
func instanceAt(env *fluxrepo.Env, loc fluxrepo.Location, o Options) []declaration {
	lines := env.FileLines(loc.File)
	if lines == nil {
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader([]byte(strings.Join(lines, "\n"))))
	var docs []*yaml.Node
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			break
		}
		if n.Kind == yaml.DocumentNode && len(n.Content) > 0 && n.Content[0].Kind == yaml.MappingNode {
			docs = append(docs, n.Content[0])
		}
	}
	// The document holding the line: the last one starting at or before it.
	var doc *yaml.Node
	for _, d := range docs {
		if d.Line <= loc.Line {
			doc = d
		}
	}
	if doc == nil {
		return nil
	}
	var m map[string]any
	if err := doc.Decode(&m); err != nil {
		return nil
	}
	var dist map[string]any
	switch {
	case m["kind"] == "FluxInstance":
		dist = mapAt(m, "spec", "distribution")
	case m["kind"] == fluxobj.HelmReleaseKind:
		dist = mapAt(m, "spec", "values", "instance", "distribution")
	default:
		dist = mapAt(m, "instance", "distribution")
	}
	locate := func(text string) fluxrepo.Location {
		for i := doc.Line - 1; i < len(lines); i++ {
			if strings.Contains(lines[i], text) {
				return fluxrepo.Location{File: loc.File, Line: i + 1}
			}
		}
		return loc
	}
	// Applied outside the environment's Kustomizations (by hand, by the
	// chart's installer): read as written.
	return distribution(applier{env: env, outside: true}, dist, dist, locate, o)
}

func mapAt(m map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		if m == nil {
			return nil
		}
		m, _ = m[k].(map[string]any)
	}
	return m
}
