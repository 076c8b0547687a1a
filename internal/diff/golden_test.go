package diff

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the goldens in testdata/golden")

// goldenCases are the fixtures whose text, Markdown and JSON are kept as
// goldens: the seed's incident (fail open and strict), a change touching
// each controller action, a failure at head, no change.
func goldenCases(t *testing.T) []struct {
	name, flux string
	repo       func(t *testing.T) string
} {
	seed := filepath.Join("testdata", "seed")
	seedRepo := func(t *testing.T) string {
		return gitRepo(t, []string{filepath.Join(seed, "base"), filepath.Join(seed, "head")}, nil)
	}
	return []struct {
		name, flux string
		repo       func(t *testing.T) string
	}{
		{"seed-fail-open", "v2.8.5", seedRepo},
		{"seed-strict", "v2.9.5", seedRepo},
		{"actions", "v2.9.5", func(t *testing.T) string {
			return twoCommits(t,
				map[string]string{"infra/app.yaml": deployment, "infra/secret.yaml": secret, "infra/sops.yaml": sopsSecret, "infra/ns.yaml": namespace},
				map[string]string{"infra/app.yaml": strings.Replace(deployment, "app:1.0.0", "app:1.1.0", 1),
					"infra/secret.yaml": strings.Replace(secret, "hunter2-base", "hunter2-head", 1),
					"infra/sops.yaml":   strings.NewReplacer("c2VjcmV0LWJhc2U=", "c2VjcmV0LWhlYWQ=", "bWFjLWJhc2U=", "bWFjLWhlYWQ=", "AGE-ENCRYPTED-BASE", "AGE-ENCRYPTED-HEAD").Replace(sopsSecret),
					"infra/ns.yaml":     "",
					"infra/crd.yaml":    crd,
					"infra/cilium.yaml": strings.Replace(readSeed(t, "infra/cilium.yaml"), "version: 1.16.5", "version: 1.17.0", 1)})
		}},
		{"fail-at-head", "v2.9.5", func(t *testing.T) string {
			return twoCommits(t, nil, map[string]string{"infra/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - cilium.yaml\n  - missing.yaml\n"})
		}},
		{"unchanged", "v2.9.5", func(t *testing.T) string {
			return twoCommits(t, nil, map[string]string{"README.md": "# a file no build reads\n"})
		}},
	}
}

// secretTexts never appear in any output of the fixtures above.
var secretTexts = []string{"hunter2", "c2VjcmV0", "bWFj", "AGE-ENCRYPTED", "ENC["}

var (
	redactedRE = regexp.MustCompile(`<redacted: hmac-sha256 [0-9a-f]+>`)
	tmpRE      = regexp.MustCompile(regexp.QuoteMeta(os.TempDir()) + `/[^\s:"'),]+`)
)

// normalize makes a run's output comparable: the redaction key is made
// per run, temporary directories are named per run.
func normalize(s string) string {
	s = redactedRE.ReplaceAllString(s, "<redacted: hmac-sha256 …>")
	return tmpRE.ReplaceAllString(s, "$$TMP")
}

// TestDiffGolden writes each fixture's diff as text, Markdown and JSON and
// compares it with testdata/golden (go test ./internal/diff/ -run
// TestDiffGolden -update rewrites them), and asserts no secret text in any.
func TestDiffGolden(t *testing.T) {
	for _, tc := range goldenCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			repo := tc.repo(t)
			res, err := Run(context.Background(), Options{Repo: repo, Base: "HEAD~1", Head: "HEAD", FluxVersion: tc.flux})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []struct {
				ext   string
				write func(*bytes.Buffer) error
			}{
				{"txt", func(b *bytes.Buffer) error { return WriteText(b, res) }},
				{"md", func(b *bytes.Buffer) error { return WriteMarkdown(b, res, MarkdownOptions{}) }},
				{"json", func(b *bytes.Buffer) error { return WriteJSON(b, res) }},
			} {
				var b bytes.Buffer
				if err := f.write(&b); err != nil {
					t.Fatal(err)
				}
				got := normalize(b.String())
				for _, s := range secretTexts {
					if strings.Contains(got, s) {
						t.Errorf("%s: secret text %q in the output:\n%s", f.ext, s, got)
					}
				}
				if f.ext == "md" && strings.HasPrefix(tc.name, "seed") {
					// The seed's incident: its window step first, above the table.
					w, tbl := strings.Index(got, "> - **clusters/dev**: if flux-system/infra reconciles before flux-system/vars"), strings.Index(got, "| Cluster |")
					if w < 0 || tbl < 0 || w > tbl {
						t.Errorf("the window step is not above the table:\n%s", got)
					}
				}
				if f.ext == "json" && !json.Valid(b.Bytes()) {
					t.Errorf("invalid JSON:\n%s", got)
				}
				p := filepath.Join("testdata", "golden", tc.name+"."+f.ext)
				if *update {
					if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(p)
				if err != nil {
					t.Fatalf("%v (run with -update to write it)", err)
				}
				if got != string(want) {
					t.Errorf("%s differs from %s (run with -update if the change is meant):\n%s", f.ext, p, got)
				}
			}
		})
	}
}
