package bootstrapfiles

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// edit replaces old by new once in file of a layout copy; old empty writes
// the file, old and new empty remove it.
type edit struct{ file, old, new string }

func copyLayout(t *testing.T, name string, edits ...edit) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(filepath.Join("../../testdata/layouts", name))); err != nil {
		t.Fatal(err)
	}
	for _, e := range edits {
		p := filepath.Join(dst, e.file)
		switch {
		case e.old == "" && e.new == "":
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			continue
		case e.old == "":
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(e.new), 0o600); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), e.old) {
			t.Fatalf("%s: %v, or no %q", e.file, err, e.old)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), e.old, e.new, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

const fluxTasks = ".taskfiles/flux/Taskfile.yaml"

// TestRead reads the layouts' bootstraps: every line of Evidence wanted
// is there, every one not wanted is not (what the reader does not
// understand is a note, never a guess).
func TestRead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, layout string
		edits        []edit
		want, not    []string
	}{
		{name: "taskfile as committed: includes and vars resolved by go-task", layout: "taskfile",
			want: []string{
				"bootstrap: Taskfile task flux:bootstrap: kubectl create secret generic sops-age creates Secret/flux-system/sops-age at .taskfiles/flux/Taskfile.yaml:9 (keys age.agekey)",
				"bootstrap: Taskfile task flux:bootstrap: sops --decrypt kubernetes/flux/vars/cluster-secrets.sops.yaml | kubectl apply -f - creates Secret/flux-system/cluster-secrets at .taskfiles/flux/Taskfile.yaml:10 (keys SECRET_DOMAIN)",
				"bootstrap: Taskfile task flux:bootstrap: kubectl apply -f kubernetes/flux/vars/cluster-settings.yaml creates ConfigMap/flux-system/cluster-settings at .taskfiles/flux/Taskfile.yaml:11 (keys CLUSTER_NAME, TIMEZONE)",
				"bootstrap: Taskfile task flux:bootstrap: kubectl apply --kustomize kubernetes/flux/config creates Kustomization/flux-system/cluster at .taskfiles/flux/Taskfile.yaml:12",
				"installs Flux v2.4.0 (kubernetes/bootstrap/flux/kustomization.yaml:5)",
			},
			not: []string{"note:", "reconcile"}},
		{name: "taskfile: the settings line removed", layout: "taskfile",
			edits: []edit{{fluxTasks, "      - kubectl apply -f {{.KUBERNETES_DIR}}/flux/vars/cluster-settings.yaml\n", ""}},
			want:  []string{"creates Secret/flux-system/cluster-secrets"}, not: []string{"cluster-settings"}},
		{name: "taskfile: -d, --filename=, -n before the verb, a block scalar", layout: "taskfile",
			edits: []edit{{fluxTasks, "      - sops --decrypt {{.KUBERNETES_DIR}}/flux/vars/cluster-secrets.sops.yaml | kubectl apply -f -\n      - kubectl apply -f {{.KUBERNETES_DIR}}/flux/vars/cluster-settings.yaml\n",
				"      - |\n        sops -d {{.KUBERNETES_DIR}}/flux/vars/cluster-secrets.sops.yaml | kubectl apply -f -\n        kubectl -n flux-system apply --filename={{.KUBERNETES_DIR}}/flux/vars/cluster-settings.yaml\n"}},
			want: []string{"sops --decrypt kubernetes/flux/vars/cluster-secrets.sops.yaml | kubectl apply -f - creates Secret/flux-system/cluster-secrets at .taskfiles/flux/Taskfile.yaml:11",
				"creates ConfigMap/flux-system/cluster-settings at .taskfiles/flux/Taskfile.yaml:12"}},
		{name: "taskfile: a task the bootstrap calls, with its vars", layout: "taskfile",
			edits: []edit{{fluxTasks, "      - kubectl apply -f {{.KUBERNETES_DIR}}/flux/vars/cluster-settings.yaml\n", "      - task: apply\n        vars: {FILE: flux/vars/cluster-settings.yaml}\n"},
				{fluxTasks, "  reconcile:\n", "  apply:\n    cmds:\n      - kubectl apply --server-side -f {{.KUBERNETES_DIR}}/{{.FILE}}\n  reconcile:\n"}},
			want: []string{"Taskfile task flux:apply: kubectl apply -f kubernetes/flux/vars/cluster-settings.yaml creates ConfigMap/flux-system/cluster-settings at .taskfiles/flux/Taskfile.yaml:20"}},
		{name: "taskfile: a stdin the reader does not understand is a note", layout: "taskfile",
			edits: []edit{{fluxTasks, "sops --decrypt {{.KUBERNETES_DIR}}/flux/vars/cluster-secrets.sops.yaml | kubectl apply -f -", "op inject -i {{.KUBERNETES_DIR}}/flux/vars/cluster-secrets.sops.yaml | kubectl apply -f -"}},
			want:  []string{"note: Taskfile task flux:bootstrap: what reaches kubectl apply -f - at .taskfiles/flux/Taskfile.yaml:10 is not read (op inject … | kubectl apply …)"},
			not:   []string{"creates Secret/flux-system/cluster-secrets"}},
		{name: "taskfile: a file named through a shell variable is a note", layout: "taskfile",
			edits: []edit{{fluxTasks, "kubectl apply -f {{.KUBERNETES_DIR}}/flux/vars/cluster-settings.yaml", "kubectl apply -f $SETTINGS"}},
			want:  []string{"note: Taskfile task flux:bootstrap: kubectl apply at .taskfiles/flux/Taskfile.yaml:11 names its file through a shell variable: not read"},
			not:   []string{"cluster-settings"}},
		{name: "taskfile: a --from-literal value is never read", layout: "taskfile",
			edits: []edit{{fluxTasks, "--from-file=age.agekey=/dev/stdin", "--from-literal=token=hunter2"}},
			want:  []string{"creates Secret/flux-system/sops-age at .taskfiles/flux/Taskfile.yaml:9 (keys token)"}, not: []string{"hunter2"}},
		{name: "taskfile: a Taskfile go-task refuses is a note", layout: "taskfile",
			edits: []edit{{"Taskfile.yaml", "version: \"3\"\n", ""}},
			want:  []string{"note: Taskfile.yaml: go-task does not read it"}, not: []string{"creates"}},
		{name: "helmfile as committed", layout: "helmfile",
			want: []string{
				"bootstrap: resources template bootstrap/resources.yaml.j2 (rendered and applied by the bootstrap; values not read) creates Secret/flux-system/sops-age at bootstrap/resources.yaml.j2:7 (keys age.agekey)",
				"creates Secret/flux-system/cluster-secrets at bootstrap/resources.yaml.j2:16 (keys SECRET_ACME_EMAIL, SECRET_CLOUDFLARE_TOKEN, SECRET_DOMAIN)",
				"bootstrap: helmfile release observability/prometheus-operator-crds (chart oci://ghcr.io/prometheus-community/charts/prometheus-operator-crds 24.0.1) at bootstrap/helmfile.d/00-crds.yaml:7",
				"helmfile release kube-system/cilium (chart cilium/cilium 1.18.4) at bootstrap/helmfile.d/01-apps.yaml:12, values $ROOT_DIR/kubernetes/apps/kube-system/cilium/app/helm/values.yaml",
				"helmfile release flux-system/flux-operator (chart oci://ghcr.io/controlplaneio-fluxcd/charts/flux-operator 0.59.0) at bootstrap/helmfile.d/01-apps.yaml:18",
				"helmfile release flux-system/flux-instance (chart oci://ghcr.io/controlplaneio-fluxcd/charts/flux-instance 0.59.0) at bootstrap/helmfile.d/01-apps.yaml:24, values ./values-flux-instance.yaml",
				"note: bootstrap/resources.yaml.j2 has template control flow",
			},
			not: []string{"op://", "ENV.", "values-flux-instance.yaml at"}},
		{name: "helmfile: a template that does not render is a note, the file skipped", layout: "helmfile",
			edits: []edit{{"bootstrap/helmfile.d/01-apps.yaml", "chart: cilium/cilium", "chart: {{ .Values.cilium.chart }}"}},
			want:  []string{"note: bootstrap/helmfile.d/01-apps.yaml: its template does not render offline", "prometheus-operator-crds"},
			not:   []string{"flux-operator"}},
		{name: "helmfile: a resources template that does not parse is a note", layout: "helmfile",
			edits: []edit{{"bootstrap/resources.yaml.j2", "stringData:\n  SECRET_DOMAIN", "stringData:\n SECRET_DOMAIN"}},
			want:  []string{"note: bootstrap/resources.yaml.j2 does not parse as YAML once its template tags are set aside"},
			not:   []string{"cluster-secrets"}},
		{name: "helmfile: a templated key makes the keys open", layout: "helmfile",
			edits: []edit{{"bootstrap/resources.yaml.j2", "  SECRET_DOMAIN:", "  {{ ENV.KEY }}:"}},
			want:  []string{"creates Secret/flux-system/cluster-secrets at bootstrap/resources.yaml.j2:16 (keys not known)"}},
		{name: "no bootstrap", layout: "bootstrap", not: []string{"bootstrap: "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := Read(copyLayout(t, tc.layout, tc.edits...))
			if err != nil {
				t.Fatal(err)
			}
			ev := strings.Join(b.Evidence(), "\n")
			for _, w := range tc.want {
				if !strings.Contains(ev, w) {
					t.Errorf("no %q in:\n%s", w, ev)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(ev, n) {
					t.Errorf("%q in:\n%s", n, ev)
				}
			}
		})
	}
}

// TestFluxInstallVersion: the forms of a Flux install a bootstrap applies.
func TestFluxInstallVersion(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"github.com/fluxcd/flux2/manifests/install?ref=v2.4.0":                    "v2.4.0",
		"https://github.com/fluxcd/flux2/manifests/install?timeout=1m&ref=v2.7.1": "v2.7.1",
		"https://github.com/fluxcd/flux2/releases/download/v2.6.0/install.yaml":   "v2.6.0",
		"https://github.com/fluxcd/flux2/releases/download/v2.6.0/manifests.tar":  "",
		"github.com/fluxcd/flux2/manifests/install":                               "",
		"./flux": "",
	} {
		if got := fluxInstallVersion(in); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
}

// TestNeutralize: template tags are set aside line for line.
func TestNeutralize(t *testing.T) {
	t.Parallel()
	in := "a: {{ x }}\n{% if y %}\nb: \"p-{{ z }}\"\n{# c #}\n"
	out, control := neutralize([]byte(in))
	want := "a: __template__\n#\nb: \"p-__template__\"\n#\n"
	if string(out) != want || !control {
		t.Fatalf("%q, %v; want %q, true", out, control, want)
	}
}
