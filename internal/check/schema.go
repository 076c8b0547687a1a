package check

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/kustomize/api/resource"

	"github.com/homelab-ops/bootstrap/internal/artifactgen"
	"github.com/homelab-ops/bootstrap/internal/crdschema"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/pkg/components"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// Preflight refuses, before anything is read, a FluxVersion whose CRDs
// this build does not embed.
func Preflight(o Options) error {
	if o.FluxVersion == "" {
		return nil
	}
	embedded, err := components.EmbeddedVersions()
	if err != nil {
		return err
	}
	if !slices.Contains(embedded, o.FluxVersion) {
		from := o.FluxVersionFrom
		if from == "" {
			from = "--flux-version"
		}
		return verify.InputErrorf("Flux %s (from %s): not embedded in this build, so its CRDs cannot validate the Flux objects; pick one of %s", o.FluxVersion, from, strings.Join(embedded, ", "))
	}
	return nil
}

// fluxGroup says whether apiVersion is of a Flux group: the kinds whose
// CRDs the release carries (the toolkit's, and source-watcher's
// source.extensions.fluxcd.io ArtifactGenerator).
func fluxGroup(apiVersion string) bool {
	g, _, _ := strings.Cut(apiVersion, "/")
	return strings.HasSuffix(g, ".toolkit.fluxcd.io") || g == artifactgen.Group
}

// schemaReads says whether schemaCheck reads obj (its first condition).
func schemaReads(sv *crdschema.Validator, o Options, obj *resource.Resource) bool {
	return !(sv == nil || !o.on(Schema) || !fluxGroup(obj.GetApiVersion()) || obj.Field("sops") != nil)
}

// schemaCheck validates obj (object r of Kustomization k as it will be applied:
// built, and substituted when k substitutes) against the Flux release's
// CRDs, as the API server does on create (crdschema). A refusal fails the
// apply of the whole Kustomization (kustomize-controller applies its
// objects as one set); an unknown field is dropped, a warning.
func schemaCheck(ctx context.Context, sv *crdschema.Validator, o Options, env *fluxrepo.Env, k *fluxrepo.Kustomization, r, obj *resource.Resource, substituted bool) []finding {
	if !schemaReads(sv, o, obj) {
		// A SOPS-encrypted object is decrypted by kustomize-controller
		// before it is applied: as written, its values are ciphertext.
		return nil
	}
	data, err := obj.MarshalJSON()
	if err != nil {
		return nil
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return nil
	}
	res := sv.Validate(ctx, u)
	if !res.Known {
		return nil
	}
	name := objName(r)
	var fs []finding
	if len(res.Errors) > 0 {
		fix := fmt.Sprintf("write %s as %s define it", fieldList(res.Errors), sv.Origin)
		if substituted && typeInvalid(res.Errors) {
			fix += "; a substituted value that reads as a number or boolean loses its string type: ${quote}${VAR}${quote} with quote: '\"' in postBuild.substitute"
		}
		fs = append(fs, at(locate(env, k, r, lastSegment(res.Errors[0].Field)+":"), verify.Finding{Detector: Schema,
			Message: fmt.Sprintf("%s is refused by the API server (%s): %s; kustomize-controller fails the whole Kustomization %s", name, sv.Origin, res.Summary(), k.Ref()),
			Fix:     fix}))
	}
	for _, d := range res.Dropped {
		fs = append(fs, at(locate(env, k, r, lastSegment(d)+":"), verify.Finding{Detector: Schema, Verdict: verify.Warn,
			Message: fmt.Sprintf("%s: field %s is not in %s, so the API server drops it and nothing reads it", name, d, sv.Origin),
			Fix:     "remove it, or correct its spelling (the schema's field names are case-sensitive)"}))
	}
	return fs
}

// labelsCheck warns of an object with a label whose value is not a
// string (an unquoted true or 1): kustomize-controller applies it, but
// with none of its own labels (fluxrepo.AsApplied: fluxcd/pkg/ssa
// SetOwnerLabels reads them with GetLabels, which returns none then), so
// a selector or policy matching one of them misses it.
func labelsCheck(o Options, env *fluxrepo.Env, k *fluxrepo.Kustomization, r *resource.Resource) []finding {
	if !o.on(Schema) {
		return nil
	}
	m, err := r.Map()
	if err != nil {
		return nil
	}
	bad := fluxrepo.MalformedLabels(m)
	if len(bad) == 0 {
		return nil
	}
	labels, _, _ := unstructured.NestedFieldNoCopy(m, "metadata", "labels")
	lm, _ := labels.(map[string]any)
	var quoted []string
	for _, l := range bad {
		quoted = append(quoted, fmt.Sprintf("%s: \"%v\"", l, lm[l]))
	}
	return []finding{at(locate(env, k, r, bad[0]+":"), verify.Finding{Detector: Schema, Verdict: verify.Warn,
		Message: fmt.Sprintf("%s: label %s is not a string (%v): Kustomization %s applies it with none of its own labels — fluxcd/pkg/ssa's SetOwnerLabels reads them with GetLabels, which returns none when a value is not a string, and sets only the owner labels; a selector matching one of them misses it", objName(r), bad[0], lm[bad[0]], k.Ref()),
		Fix:     "quote the value: " + strings.Join(quoted, ", ")})}
}

func typeInvalid(errs field.ErrorList) bool {
	for _, e := range errs {
		if e.Type == field.ErrorTypeTypeInvalid || strings.Contains(e.Detail, "must be of type") {
			return true
		}
	}
	return false
}

func fieldList(errs field.ErrorList) string {
	var out []string
	seen := map[string]bool{}
	for _, e := range errs {
		if f := e.Field; f != "" && !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return "the object"
	}
	return strings.Join(out, ", ")
}

func lastSegment(path string) string {
	path = strings.TrimRight(path, "]")
	if i := strings.LastIndexAny(path, ".["); i >= 0 {
		return path[i+1:]
	}
	return path
}
