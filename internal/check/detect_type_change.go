package check

import (
	"fmt"

	"github.com/fluxcd/pkg/envsubst/parse"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/kustomize/api/resource"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// detTypeChange is the [type] row of the table of detectors.
var detTypeChange = detector{ID: TypeChange, Gate: Substitution, Advisory: false,
	Short:   "built-in object invalid after substitution (a value whose YAML type changed): the API server refuses it",
	Rule:    "fluxcd/pkg/kustomize v1.35.6 SubstituteVariables substitutes the YAML text and decodes it again: a value whose type changed no longer decodes as the built-in type",
	Emitted: "substitution.typeChange, on each object of substitution.object's scan (subst.go)",
}

// typeChange is the [type] finding of r, substituted as out: out does not
// decode into its built-in Go type, as the API server decodes it before it
// accepts it, because a value's YAML type changed with the substitution (an
// unquoted ${REPLICAS} becoming a number where the API wants a string, e.g.
// StorageClass parameters), which fails the apply of the whole
// Kustomization. Objects substituted with a value the check cannot read
// (encrypted, made at runtime, a prerequisite) are not judged, nor kinds
// outside client-go's scheme (custom resources).
func (s *substitution) typeChange(r, out *resource.Resource, nodes []*parse.FuncNode) []finding {
	if out == nil || len(nodes) == 0 || !s.o.on(TypeChange) || s.placeholders(nodes) {
		return nil
	}
	gvk := schema.FromAPIVersionAndKind(out.GetApiVersion(), out.GetKind())
	obj, err := clientgoscheme.Scheme.New(gvk)
	if err != nil {
		return nil
	}
	m, err := out.Map()
	if err != nil {
		return nil
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, obj); err != nil {
		expr := "${" + nodes[0].Param
		return []finding{located(s.env, s.k, r, finding{Finding: verify.Finding{Detector: TypeChange,
			Message: fmt.Sprintf("%s after substitution is not a valid %s (%v): a substituted value that reads as a number or boolean lost its string type — quotes around ${…} in the file do not survive the controller's build — so the API server refuses it and kustomize-controller fails the whole Kustomization %s", s.objName(r), gvk.Kind, err, s.k.Ref()),
			Fix:     "wrap the variable in a double-quote variable, as kustomize-controller's docs say (post build substitution of numbers and booleans): ${quote}${VAR}${quote} with quote: '\"' in postBuild.substitute"}, search: expr})}
	}
	return nil
}
