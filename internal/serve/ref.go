package serve

import (
	"fmt"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/fluxcd/pkg/version"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// DefaultBranch is the branch source-controller checks out when spec.ref
// names nothing (fluxcd/pkg/git v0.52.0 options.go DefaultBranch, used by
// gogit/clone.go Client.clone).
const DefaultBranch = "master"

// tagDereferenceSuffix ends a tag ref name that asks for the tag's commit
// (fluxcd/pkg/git gogit/clone.go tagDereferenceSuffix).
const tagDereferenceSuffix = "^{}"

// RefOf reads a GitRepository's spec.ref as the API type; nil when it has
// none.
func RefOf(src *unstructured.Unstructured) (*sourcev1.GitRepositoryRef, error) {
	m, ok, err := unstructured.NestedMap(src.Object, "spec", "ref")
	if err != nil || !ok {
		return nil, err
	}
	var ref sourcev1.GitRepositoryRef
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &ref); err != nil {
		return nil, fmt.Errorf("GitRepository %s/%s spec.ref: %w", src.GetNamespace(), src.GetName(), err)
	}
	if ref == (sourcev1.GitRepositoryRef{}) {
		return nil, nil
	}
	return &ref, nil
}

// RefMap is ref as the unstructured spec.ref (nil for none).
func RefMap(ref *sourcev1.GitRepositoryRef) map[string]any {
	if ref == nil {
		return nil
	}
	m := map[string]any{}
	for k, v := range map[string]string{"branch": ref.Branch, "tag": ref.Tag, "semver": ref.SemVer, "name": ref.Name, "commit": ref.Commit} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}

// DescribeRef says what spec.ref declares, e.g. "spec.ref.name
// refs/heads/main", every field set, in source-controller's precedence.
func DescribeRef(ref *sourcev1.GitRepositoryRef) string {
	if ref == nil {
		return "no spec.ref"
	}
	var parts []string
	for _, f := range [][2]string{{"commit", ref.Commit}, {"name", ref.Name}, {"tag", ref.Tag}, {"semver", ref.SemVer}, {"branch", ref.Branch}} {
		if f[1] != "" {
			parts = append(parts, "spec.ref."+f[0]+" "+f[1])
		}
	}
	if len(parts) == 0 {
		return "no spec.ref"
	}
	return strings.Join(parts, ", ")
}

// Want is what a GitRepository's spec.ref makes source-controller check
// out, and so what --serve must serve: the strategy fluxcd/pkg/git
// (v0.52.0, gogit/clone.go Client.clone) picks from the fields
// source-controller copies one to one from spec.ref
// (internal/controller/gitrepository_controller.go gitCheckout): commit,
// then name, then tag, then semver, then branch (default master). The code
// ranks tag over semver, though the API's doc comment says semver takes
// precedence over tag: the code is what runs.
type Want struct {
	// Declared says what spec.ref declares, for messages.
	Declared string
	// Commit is the commit the ref pins ("" unless spec.ref.commit).
	Commit string
	// Branch is the branch to serve ("" when a tag is served).
	Branch string
	// Tag is the tag to serve; SemVer the range a tag at the commit must
	// satisfy (the tag is then picked from the checkout's tags).
	Tag, SemVer string
	// Reference is the ref source-controller reports the revision under
	// ("" for a bare commit), once Tag is known for a semver range.
	Reference string
	// Absolute: the revision names Reference whole (spec.ref.name is set).
	Absolute bool
}

// Revision is the artifact revision source-controller reports for commit
// checked out as w says.
func (w *Want) Revision(commit string) string { return Revision(w.Reference, commit, w.Absolute) }

// WantOf reads what ref makes source-controller check out. A ref --serve
// cannot stand for (a name outside refs/heads and refs/tags, such as
// refs/pull/N/head, which the Git host makes) is an input error saying
// what to declare or pass instead.
func WantOf(ref *sourcev1.GitRepositoryRef) (*Want, error) {
	w := &Want{Declared: DescribeRef(ref)}
	if ref == nil {
		ref = &sourcev1.GitRepositoryRef{}
	}
	w.Absolute = ref.Name != ""
	switch {
	case ref.Commit != "":
		// gogit cloneCommit: the branch (when given) is cloned and must hold
		// the commit; the revision is reported under the name, else the
		// branch, else none.
		w.Commit, w.Branch = ref.Commit, ref.Branch
		if w.Branch == "" {
			w.Branch = "main" // any branch: the clone fetches every one
		}
		switch {
		case ref.Name != "":
			w.Reference = ref.Name
		case ref.Branch != "":
			w.Reference = "refs/heads/" + ref.Branch
		}
	case ref.Name != "":
		// gogit cloneRefName: a branch or tag ref is cloned as that branch
		// or tag; any other ref (refs/pull/N/head, refs/merge-requests/N/head)
		// is resolved on the remote and cloned by commit.
		switch {
		case strings.HasPrefix(ref.Name, "refs/heads/"):
			w.Branch = strings.TrimPrefix(ref.Name, "refs/heads/")
		case strings.HasPrefix(ref.Name, "refs/tags/"):
			w.Tag = strings.TrimSuffix(strings.TrimPrefix(ref.Name, "refs/tags/"), tagDereferenceSuffix)
		default:
			return nil, verify.InputErrorf("--serve: the root's GitRepository declares spec.ref.name %s, a ref the Git host makes (a pull or merge request): --serve serves this checkout as a branch or a tag, not as %s; declare a branch or a tag in git (spec.ref.name refs/heads/main, or a FluxInstance's spec.sync.ref refs/heads/main), or pass --source-url URL (instead of --serve) naming a repository that holds %s",
				ref.Name, ref.Name, ref.Name)
		}
		w.Reference = ref.Name
	case ref.Tag != "":
		w.Tag, w.Reference = ref.Tag, "refs/tags/"+ref.Tag
	case ref.SemVer != "":
		if _, err := semver.NewConstraint(ref.SemVer); err != nil {
			return nil, verify.InputErrorf("--serve: the root's GitRepository declares spec.ref.semver %q, which is not a semver range (%v), so source-controller would not check it out either: fix it in git", ref.SemVer, err)
		}
		w.SemVer = ref.SemVer
	default:
		w.Branch = ref.Branch
		if w.Branch == "" {
			w.Branch = DefaultBranch
		}
		w.Reference = "refs/heads/" + w.Branch
	}
	return w, nil
}

// PickSemVer is the tag source-controller would pick for rng among tags:
// the highest version that satisfies it, read as fluxcd/pkg/version
// ParseVersion reads it (gogit/clone.go cloneSemVer); "" when none does.
// All of tags point at one commit, so cloneSemVer's tie-break by commit
// time does not apply.
func PickSemVer(rng string, tags []string) string {
	c, err := semver.NewConstraint(rng)
	if err != nil {
		return ""
	}
	var vs semver.Collection
	for _, t := range tags {
		if v, err := version.ParseVersion(t); err == nil && c.Check(v) {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return ""
	}
	sort.Stable(vs)
	return vs[len(vs)-1].Original()
}

// Revision is the artifact revision source-controller reports for commit
// checked out under reference (source-controller v1.9
// internal/controller/gitrepository_controller.go commitReference: with
// spec.ref.name set, fluxcd/pkg/git Commit.AbsoluteReference, the whole
// reference; otherwise Commit.String, the reference's third path segment
// on; then "@" and the digest, or the digest alone without a reference).
func Revision(reference, commit string, absolute bool) string {
	if reference == "" {
		return "sha1:" + commit
	}
	if absolute {
		return reference + "@sha1:" + commit
	}
	if short := strings.SplitAfterN(reference, "/", 3); len(short) == 3 {
		return short[2] + "@sha1:" + commit
	}
	return "sha1:" + commit
}
