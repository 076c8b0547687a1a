package rootsync

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/homelab-ops/bootstrap/internal/agekey"
	"github.com/homelab-ops/bootstrap/internal/agekey/agekeytest"
	"github.com/homelab-ops/bootstrap/internal/kube"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

const taskfile = "../../testdata/layouts/taskfile"

// copyTaskfile copies the flux-cluster-template layout with edits (file:
// content; "" removes the file).
func copyTaskfile(t *testing.T, edits map[string]string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(taskfile, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(taskfile, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	for rel, content := range edits {
		p := filepath.Join(dst, filepath.FromSlash(rel))
		if content == "" {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// readFixture is a file of the layout, edited by the replacements (old, new pairs).
func readFixture(t *testing.T, rel string, pairs ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(taskfile, rel))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for i := 0; i+1 < len(pairs); i += 2 {
		if !strings.Contains(s, pairs[i]) {
			t.Fatalf("%s holds no %q", rel, pairs[i])
		}
		s = strings.Replace(s, pairs[i], pairs[i+1], 1)
	}
	return s
}

func taskfileOpts(repo string) Options {
	return Options{Repo: repo, Path: "kubernetes/flux", Namespace: "flux-system", RootName: "cluster"}
}

const (
	clusterYAML = "kubernetes/flux/config/cluster.yaml"
	varsKust    = "kubernetes/flux/vars/kustomization.yaml"
	secretsFile = "kubernetes/flux/vars/cluster-secrets.sops.yaml"
)

func TestSelectSeeds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		edits func(t *testing.T) map[string]string
		want  []string
	}{
		{"the root's vars, only the root applies them", func(*testing.T) map[string]string { return nil },
			[]string{"ConfigMap/flux-system/cluster-settings", "Secret/flux-system/cluster-secrets"}},
		{"an optional substituteFrom is not seeded", func(t *testing.T) map[string]string {
			return map[string]string{clusterYAML: readFixture(t, clusterYAML, "        name: cluster-secrets\n", "        name: cluster-secrets\n        optional: true\n")}
		}, []string{"ConfigMap/flux-system/cluster-settings"}},
		{"the root substituting from nothing seeds nothing", func(t *testing.T) map[string]string {
			return map[string]string{clusterYAML: readFixture(t, clusterYAML,
				"  postBuild:\n    substituteFrom:\n      - kind: ConfigMap\n        name: cluster-settings\n      - kind: Secret\n        name: cluster-secrets\n", "")}
		}, nil},
		{"an object another Kustomization applies is not the root's to seed", func(t *testing.T) map[string]string {
			return map[string]string{
				varsKust: "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ./cluster-secrets.sops.yaml\n",
				"kubernetes/flux/vars/cluster-settings.yaml":          "",
				"kubernetes/apps/default/cluster-settings.yaml":       readFixture(t, "kubernetes/flux/vars/cluster-settings.yaml"),
				"kubernetes/apps/default/kustomization.yaml":          readFixture(t, "kubernetes/apps/default/kustomization.yaml", "resources:\n", "resources:\n  - ./cluster-settings.yaml\n"),
				"kubernetes/apps/default/echo/app/kustomization.yaml": readFixture(t, "kubernetes/apps/default/echo/app/kustomization.yaml"),
			}
		}, []string{"Secret/flux-system/cluster-secrets"}},
		{"a Secret an ExternalSecret makes is not seeded", func(t *testing.T) map[string]string {
			return map[string]string{
				varsKust:                             "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ./cluster-settings.yaml\n  - ./external.yaml\n",
				secretsFile:                          "",
				"kubernetes/flux/vars/external.yaml": "apiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata:\n  name: cluster-secrets\n  namespace: flux-system\nspec:\n  secretStoreRef: {kind: ClusterSecretStore, name: vault}\n  data:\n    - secretKey: SECRET_DOMAIN\n      remoteRef: {key: domain}\n",
			}
		}, []string{"ConfigMap/flux-system/cluster-settings"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := Build(taskfileOpts(copyTaskfile(t, tt.edits(t))))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range SelectSeeds(r.Env) {
				got = append(got, s.Key())
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("seeds %v, want %v", got, tt.want)
			}
		})
	}
}

// encryptedRepo is the layout with cluster-secrets encrypted to a fresh
// key; it returns the repository and the key.
func encryptedRepo(t *testing.T, value string, unsorted bool, edits map[string]string) (string, *agekey.Identities) {
	t.Helper()
	keyFile, recipient, err := agekeytest.NewIdentity()
	if err != nil {
		t.Fatal(err)
	}
	ids, err := agekey.Parse([]byte(keyFile), "test")
	if err != nil {
		t.Fatal(err)
	}
	// Keys sorted, as kubectl writes them: kustomize-controller decrypts
	// the object as sorted JSON.
	plain := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: cluster-secrets\n  namespace: flux-system\nstringData:\n  SECRET_DOMAIN: " + value + "\n  SECRET_OTHER: other-" + value + "\ntype: Opaque\n"
	if unsorted {
		plain = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: cluster-secrets\n  namespace: flux-system\ntype: Opaque\nstringData:\n  SECRET_DOMAIN: " + value + "\n"
	}
	enc, err := agekey.Encrypt("cluster-secrets.sops.yaml", []byte(plain), []string{recipient}, agekey.EncryptOptions{EncryptedRegex: "^(data|stringData)$"})
	if err != nil {
		t.Fatal(err)
	}
	if edits == nil {
		edits = map[string]string{}
	}
	edits[secretsFile] = string(enc)
	return copyTaskfile(t, edits), ids
}

func TestPrepareInputsSeeds(t *testing.T) {
	t.Parallel()
	const value = "s3cr3t.example.test"
	repo, ids := encryptedRepo(t, value, false, nil)
	unsortedRepo, unsortedIDs := encryptedRepo(t, value, true, nil)
	wrongFile, _, _ := agekeytest.NewIdentity()
	wrong, _ := agekey.Parse([]byte(wrongFile), "wrong")
	tests := []struct {
		name    string
		repo    string
		dec     Decrypter
		err     string
		pending bool
	}{
		{"decrypted with the key", repo, ids, "", false},
		{"no key: waits for the cluster's", repo, nil, "", true},
		{"the wrong key is refused, naming the file", repo, wrong, "Secret/flux-system/cluster-secrets (kubernetes/flux/vars/cluster-secrets.sops.yaml:1) does not decrypt with the age key", false},
		// kustomize-controller's JSON (keys sorted) fails the MAC of a file
		// written in another order: refused as the controller would fail.
		{"keys in another order fail as in the controller", unsortedRepo, unsortedIDs, "MAC mismatch", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := Build(taskfileOpts(tt.repo))
			if err != nil {
				t.Fatal(err)
			}
			err = PrepareInputs(r, nil, tt.dec)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || strings.Contains(err.Error(), value) {
					t.Fatalf("err %v, want %q and no value", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Inputs.pending(); got != tt.pending {
				t.Fatalf("pending %v, want %v", got, tt.pending)
			}
			cm := r.Inputs.Seed("ConfigMap/flux-system/cluster-settings")
			if cm == nil || cm.Object == nil {
				t.Fatal("the ConfigMap seed needs no key and is built")
			}
			if tt.pending {
				return
			}
			s := r.Inputs.Seed("Secret/flux-system/cluster-secrets").Object
			for _, o := range []map[string]any{s.Object, cm.Object.Object} {
				labels, _, _ := unstructuredLabels(o)
				if labels["kustomize.toolkit.fluxcd.io/name"] != "cluster" || labels["kustomize.toolkit.fluxcd.io/namespace"] != "flux-system" {
					t.Errorf("owner labels %v, want the root's", labels)
				}
			}
			if _, ok := s.Object["sops"]; ok {
				t.Error("the seed keeps the sops metadata")
			}
			if _, ok := s.Object["stringData"]; ok {
				t.Error("stringData not normalized into data, as the controller applies it")
			}
			if got := r.Inputs.Seed("Secret/flux-system/cluster-secrets").Keys(); !slices.Equal(got, []string{"SECRET_DOMAIN", "SECRET_OTHER"}) {
				t.Errorf("keys %v", got)
			}
		})
	}
}

func unstructuredLabels(o map[string]any) (map[string]any, bool, error) {
	md, _ := o["metadata"].(map[string]any)
	l, ok := md["labels"].(map[string]any)
	return l, ok, nil
}

func TestParseSupply(t *testing.T) {
	t.Parallel()
	const value = "never-print-me"
	secret := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: cluster-extra\n  namespace: flux-system\nstringData:\n  EXTRA: " + value + "\n"
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra-vars\n  namespace: default\ndata:\n  A: " + value + "\n"
	tests := []struct {
		name string
		in   string
		keys []string
		err  string
	}{
		{"a Secret", secret, []string{"Secret/flux-system/cluster-extra"}, ""},
		{"a Secret and a ConfigMap, empty documents skipped", "---\n" + secret + "---\n---\n" + cm, []string{"Secret/flux-system/cluster-extra", "ConfigMap/default/extra-vars"}, ""},
		{"an unknown kind is refused with its document", secret + "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\n  namespace: default\nspec:\n  token: " + value + "\n", nil, `in.yaml document 2 is apiVersion "apps/v1" kind "Deployment"`},
		{"a v2 Secret is refused", strings.Replace(secret, "apiVersion: v1", "apiVersion: v2", 1), nil, `document 1 is apiVersion "v2" kind "Secret"`},
		{"no namespace", strings.Replace(secret, "  namespace: flux-system\n", "", 1), nil, "document 1 (Secret /cluster-extra) needs metadata.name and metadata.namespace"},
		{"no name", strings.Replace(cm, "  name: extra-vars\n", "", 1), nil, "needs metadata.name and metadata.namespace"},
		{"an invalid name", strings.Replace(cm, "name: extra-vars", "name: Extra_Vars", 1), nil, "metadata.name"},
		{"not YAML", "apiVersion: v1\nkind: [Secret\n  EXTRA: " + value + "\n", nil, "in.yaml: document 1 is not YAML (line "},
		{"a list, not an object", "- " + value + "\n", nil, "document 1 (line 1) is not an object"},
		{"nothing in it", "---\n", nil, "holds no object"},
		{"an undecodable Secret value", strings.Replace(secret, "stringData:\n  EXTRA: "+value, "data:\n  EXTRA: \"%%"+value+"\"", 1), nil, "is not a valid Secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseSupply("in.yaml", []byte(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				if strings.Contains(err.Error(), value) {
					t.Fatalf("the error holds the value: %v", err)
				}
				var ie *verify.InputError
				if !errors.As(err, &ie) {
					t.Errorf("not an input error: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, s := range got {
				keys = append(keys, s.Key())
				if s.Object == nil || !slices.Contains(s.Keys(), map[string]string{"Secret": "EXTRA", "ConfigMap": "A"}[s.Kind]) {
					t.Errorf("%s: keys %v", s.Key(), s.Keys())
				}
			}
			if !slices.Equal(keys, tt.keys) {
				t.Errorf("objects %v, want %v", keys, tt.keys)
			}
		})
	}
}

func TestSupplyEncrypted(t *testing.T) {
	t.Parallel()
	keyFile, recipient, _ := agekeytest.NewIdentity()
	ids, _ := agekey.Parse([]byte(keyFile), "test")
	plain := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: cluster-extra\n  namespace: flux-system\ntype: Opaque\nstringData:\n  EXTRA: hidden-value\n"
	enc, err := agekey.Encrypt("x.yaml", []byte(plain), []string{recipient}, agekey.EncryptOptions{EncryptedRegex: "^(data|stringData)$"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseSupply("enc.yaml", enc)
	if err != nil || len(got) != 1 || !got[0].Encrypted || got[0].Object != nil {
		t.Fatalf("got %+v, %v: want one encrypted object, not decrypted yet", got, err)
	}
	if err := got[0].Decrypt(nil); err == nil || !strings.Contains(err.Error(), "give the age key") {
		t.Fatalf("without a key: %v", err)
	}
	otherFile, _, _ := agekeytest.NewIdentity()
	other, _ := agekey.Parse([]byte(otherFile), "other")
	if err := got[0].Decrypt(other); err == nil || strings.Contains(err.Error(), "hidden-value") {
		t.Fatalf("the wrong key: %v", err)
	}
	if err := got[0].Decrypt(ids); err != nil {
		t.Fatal(err)
	}
	if k := got[0].Keys(); !slices.Equal(k, []string{"EXTRA"}) {
		t.Errorf("keys %v", k)
	}
}

// extraRoot is the layout whose root also substitutes from Secret
// cluster-extra, which nothing renders.
func extraRoot(t *testing.T) map[string]string {
	return map[string]string{clusterYAML: readFixture(t, clusterYAML, "        name: cluster-secrets\n", "        name: cluster-secrets\n      - kind: Secret\n        name: cluster-extra\n")}
}

func TestRootInputs(t *testing.T) {
	t.Parallel()
	extra := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "cluster-extra"}, Data: map[string][]byte{"X": []byte("y")}}
	supply := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: cluster-extra\n  namespace: flux-system\nstringData:\n  X: some-value\n"
	tests := []struct {
		name    string
		live    []client.Object
		supply  string
		verdict verify.Verdict
		msg     string
	}{
		{"missing: refused, naming it and the fix", nil, "", verify.Fail, "Secret flux-system/cluster-extra is not in the cluster, not seeded and not supplied (the repository does not hold it): the root flux-system/cluster (kubernetes/flux/config/cluster.yaml:18) substitutes from it"},
		{"in the cluster", []client.Object{extra}, "", verify.Pass, "exists in the cluster"},
		{"supplied", nil, supply, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := Build(taskfileOpts(copyTaskfile(t, extraRoot(t))))
			if err != nil {
				t.Fatal(err)
			}
			var sup []*Supplied
			if tt.supply != "" {
				if sup, err = ParseSupply("extra.yaml", []byte(tt.supply)); err != nil {
					t.Fatal(err)
				}
			}
			if err := PrepareInputs(r, sup, nil); err != nil {
				t.Fatal(err)
			}
			scheme, err := kube.Scheme()
			if err != nil {
				t.Fatal(err)
			}
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tt.live...).Build()
			checks := rootInputs(context.Background(), c, r)
			if tt.verdict == "" {
				if len(checks) != 0 {
					t.Fatalf("a supplied object needs no check here: %+v", checks)
				}
				// sync.prerequisite counts it present, with its keys.
				pc := Prerequisites(context.Background(), c, r)
				if got := find(t, pc, GatePrerequisite.Each("Secret/flux-system/cluster-extra").ID); got.Verdict != verify.Pass || !strings.Contains(got.Message, "supplied by extra.yaml document 1") {
					t.Errorf("sync.prerequisite: %+v", got)
				}
				return
			}
			got := find(t, checks, GateRootInput.Each("Secret/flux-system/cluster-extra").ID)
			if got.Verdict != tt.verdict || !strings.Contains(got.Message, tt.msg) {
				t.Errorf("%s: %s, want %s %q", got.ID, got.Verdict, tt.verdict, tt.msg)
			}
			if tt.verdict == verify.Fail && !strings.Contains(got.Message, "pass --supply FILE holding Secret flux-system/cluster-extra") {
				t.Errorf("the fix is not named: %s", got.Message)
			}
		})
	}
}
