package check

import (
	"fmt"
	"testing"

	"github.com/fluxcd/pkg/envsubst/parse"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// [type] of a built-in object whose substitution changed a value's YAML
// type: as written, then as the controller substitutes it.
func TestTypeChange(t *testing.T) {
	t.Parallel()
	const (
		class  = "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: fast}\nprovisioner: driver.longhorn.io\nparameters:\n  numberOfReplicas: %s\n"
		widget = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: apps}\nspec:\n  replicas: %s\n"
	)
	for _, tc := range []struct {
		name, written, substituted string
		vars                       map[string]string
		off                        verify.Detector // turned off
		want                       []verdictText
	}{
		{name: "a number where a string is wanted", written: class, substituted: "3",
			want: failing("StorageClass/fast after substitution is not a valid StorageClass")},
		{name: "quoted as the docs say", written: class, substituted: `"3"`},
		{name: "a custom resource: not judged", written: widget, substituted: "3"},
		{name: "a value not readable here: not judged", written: class, substituted: "3", vars: map[string]string{"N": fluxrepo.PrerequisiteValue}},
		{name: "off", written: class, substituted: "3", off: TypeChange},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := scanOf(tc.vars, true, tc.off)
			written := fmt.Sprintf(tc.written, "${N}")
			tree, err := parse.Parse(written)
			if err != nil {
				t.Fatal(err)
			}
			nodes, _ := funcNodes(written, tree, nil)
			fs := s.typeChange(object(t, written), object(t, fmt.Sprintf(tc.written, tc.substituted)), nodes)
			wantFindings(t, fs, TypeChange, appsAt, tc.want...)
		})
	}
}
