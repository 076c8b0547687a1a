package diff

import (
	"reflect"
	"testing"

	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resource"
)

func readsResource(t *testing.T, y string) *resource.Resource {
	t.Helper()
	r, err := provider.NewDefaultDepProvider().GetResourceFactory().FromBytes([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Two objects share a read only where their trees are the same, a
// position apart (toUnstructured reads them the same): never a quoted
// number and a number, a key order, a tag, a comment.
func TestObjReadsByTree(t *testing.T) {
	t.Parallel()
	const base = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  n: \"1\"\n  m: x\n"
	for _, tc := range []struct {
		name, other string
		same        bool
	}{
		{"the same", base, true},
		{"a comment", "# note\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a  # here\ndata:\n  n: \"1\"\n  m: x\n", false},
		{"another indentation", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n    name: a\ndata:\n    n: \"1\"\n    m: x\n", true},
		{"a value", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  n: \"2\"\n  m: x\n", false},
		{"single quotes", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  n: '1'\n  m: x\n", false},
		{"a key order", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  m: x\n  n: \"1\"\n", false},
		{"an explicit tag", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  n: !!str 1\n  m: x\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := readsResource(t, base), readsResource(t, tc.other)
			if got := treeSum(a.YNode()) == treeSum(b.YNode()); got != tc.same {
				t.Fatalf("same sum: %v, want %v", got, tc.same)
			}
			rd := newObjReads()
			ua, err := rd.read(a)
			if err != nil {
				t.Fatal(err)
			}
			ub, err := rd.read(b)
			if err != nil {
				t.Fatal(err)
			}
			if shared := ua == ub; shared != tc.same {
				t.Fatalf("shared: %v, want %v", shared, tc.same)
			}
			// Shared only where each read alone is the same.
			wa, _ := toUnstructured(a)
			wb, _ := toUnstructured(b)
			if tc.same && !reflect.DeepEqual(wa.Object, wb.Object) {
				t.Fatalf("shared, but read alone they differ:\n%v\n%v", wa.Object, wb.Object)
			}
			if !reflect.DeepEqual(ub.Object, wb.Object) {
				t.Fatalf("the read differs from toUnstructured:\n%v\n%v", ub.Object, wb.Object)
			}
		})
	}
}
