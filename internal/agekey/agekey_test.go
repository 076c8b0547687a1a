package agekey_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"
	"github.com/fluxcd/pkg/ssa"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/homelab-ops/bootstrap/internal/agekey"

	"github.com/homelab-ops/bootstrap/internal/agekey/agekeytest"
	"github.com/homelab-ops/bootstrap/internal/session"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

const marker = "AGE-SECRET-KEY-"

type key struct{ file, recipient string }

func newKey(t *testing.T) key {
	t.Helper()
	f, r, err := agekeytest.NewIdentity()
	if err != nil {
		t.Fatal(err)
	}
	return key{f, r}
}

// hygiene fails the test when s contains key material.
func hygiene(t *testing.T, what, s string) {
	t.Helper()
	if strings.Contains(strings.ToUpper(s), marker) {
		t.Errorf("%s contains age key material: %q", what, s)
	}
}

// reportHygiene writes r in every format and scans each.
func reportHygiene(t *testing.T, r *verify.Report) {
	t.Helper()
	for name, w := range map[string]func(*bytes.Buffer) error{
		"text":  func(b *bytes.Buffer) error { return verify.WriteText(b, r) },
		"json":  func(b *bytes.Buffer) error { return verify.WriteJSON(b, r) },
		"junit": func(b *bytes.Buffer) error { return verify.WriteJUnit(b, r) },
	} {
		var b bytes.Buffer
		if err := w(&b); err != nil {
			t.Fatal(err)
		}
		hygiene(t, name+" report", b.String())
	}
}

// isolate points TMPDIR at a fresh directory and, at the end of the test,
// fails if anything left there holds key material.
func isolate(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	t.Cleanup(func() { scanDir(t, dir) })
}

func scanDir(t *testing.T, dir string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err == nil {
			hygiene(t, "file "+p, string(b))
		}
		return nil
	})
}

func TestParseRefusals(t *testing.T) {
	t.Parallel()
	k := newKey(t)
	secretLine := lines(k.file)[2]
	id, _ := age.GenerateX25519Identity()
	pq, err := age.GenerateHybridIdentity()
	if err != nil {
		t.Fatal(err)
	}
	flip := []byte(secretLine)
	if flip[30] == 'Q' {
		flip[30] = 'P'
	} else {
		flip[30] = 'Q'
	}
	tests := []struct{ name, input, want string }{
		{"empty", "", "is empty"},
		{"whitespace", " \n\t\n", "is empty"},
		{"comments only", "# created: today\n# public key: " + k.recipient + "\n", "only comments"},
		{"public key", k.recipient + "\n", "age public key (a recipient"},
		{"public key of a hybrid identity", pq.Recipient().String(), "age public key"},
		{"truncated", secretLine[:40], "malformed age identity"},
		{"altered checksum", string(flip), "malformed age identity"},
		{"truncated pq", pq.String()[:60], "malformed post-quantum"},
		{"plugin", "AGE-PLUGIN-YUBIKEY-1QQQQQQQQQQQQQQQQQ", "age plugin identity"},
		{"ssh private key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n", "SSH or PEM private key"},
		{"ssh public key", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI user@host", "SSH public key"},
		{"encrypted identity", "-----BEGIN AGE ENCRYPTED FILE-----\nYWdlLWVuY3J5cHRpb24ub3JnL3YxCi0+IHNjcnlwdA\n-----END AGE ENCRYPTED FILE-----\n", "age-encrypted file"},
		{"unknown type", "AGE-SECRET-KEY-XYZ-1ABCDEF", "unknown type"},
		{"junk", "password123", "not an age identity"},
		{"binary", "\xff\xfe\x00", "not valid UTF-8"},
		{"good then bad", id.String() + "\n" + k.recipient + "\n", "line 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tc.input), "test-input")
			if err == nil {
				t.Fatal("parsed; want a refusal")
			}
			if !verify.IsInput(err) {
				t.Errorf("error is not an input error (exit 2): %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "test-input") {
				t.Errorf("error %q: want it to name the input and say %q", err, tc.want)
			}
			hygiene(t, "error", err.Error())
			for _, l := range lines(tc.input) {
				if len(l) > 12 && strings.Contains(err.Error(), l) {
					t.Errorf("error echoes an input line: %q", err)
				}
			}
		})
	}
}

func lines(s string) []string { return strings.Split(strings.TrimSpace(s), "\n") }

func TestParseMultipleIdentities(t *testing.T) {
	t.Parallel()
	a, b := newKey(t), newKey(t)
	pq, _ := age.GenerateHybridIdentity()
	ids, err := Parse([]byte(a.file+"\n"+b.file+"\n"+pq.String()+"\n"), "two.key")
	if err != nil {
		t.Fatal(err)
	}
	if got := ids.Recipients(); len(got) != 3 || got[0] != a.recipient || got[1] != b.recipient || got[2] != pq.Recipient().String() {
		t.Fatalf("recipients %v", got)
	}
	if ids.Keys[2].Type != "hybrid (post-quantum)" {
		t.Errorf("type %q", ids.Keys[2].Type)
	}
	// The Secret holds all of them, canonically: parsing it back gives the
	// same keys and the same bytes.
	again, err := Parse(ids.SecretData(), "secret")
	if err != nil {
		t.Fatal(err)
	}
	if !again.SameKeys(ids) || !bytes.Equal(again.SecretData(), ids.SecretData()) {
		t.Error("SecretData does not round-trip")
	}
	// Printing an identity never shows the secret half.
	for _, s := range []string{ids.Keys[0].String(), ids.Keys[0].GoString(), sprintAll(ids)} {
		hygiene(t, "printed identity", s)
	}
}

func TestReadSources(t *testing.T) {
	isolate(t)
	k := newKey(t)
	dir := t.TempDir()
	private := filepath.Join(dir, "private.key")
	open := filepath.Join(dir, "open.key")
	if err := os.WriteFile(private, []byte(k.file), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(open, []byte(k.file), 0o644); err != nil {
		t.Fatal(err)
	}
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

	ids, err := Read(Input{Flag: "-", Stdin: strings.NewReader(k.file)})
	if err != nil || ids.Source != "stdin" || ids.FromFile {
		t.Fatalf("stdin: %v %+v", err, ids)
	}
	ids, err = Read(Input{Flag: private, Getenv: env(map[string]string{EnvKey: "ignored"})})
	if err != nil || !ids.Has(k.recipient) {
		t.Fatalf("file: %v", err)
	}
	if c := IdentityChecks(ids); len(c) != 2 || c[1].Verdict != verify.Pass {
		t.Errorf("mode 0600: %+v", c)
	}
	ids, err = Read(Input{Flag: open})
	if err != nil {
		t.Fatal(err)
	}
	c := IdentityChecks(ids)
	if c[1].Verdict != verify.Warn || !strings.Contains(c[1].Message, "chmod 600") {
		t.Errorf("mode 0644 should warn with the fix: %+v", c[1])
	}
	ids, err = Read(Input{Getenv: env(map[string]string{EnvKey: k.file, EnvKeyFile: "/nonexistent"})})
	if err != nil || ids.Source != "$SOPS_AGE_KEY" {
		t.Fatalf("SOPS_AGE_KEY: %v", err)
	}
	ids, err = Read(Input{Getenv: env(map[string]string{EnvKeyFile: open})})
	if err != nil || !ids.FromFile || !strings.Contains(ids.Source, open) {
		t.Fatalf("SOPS_AGE_KEY_FILE: %v", err)
	}

	for name, in := range map[string]Input{
		"nothing":         {},
		"missing file":    {Flag: filepath.Join(dir, "nope")},
		"directory":       {Flag: dir},
		"empty stdin":     {Flag: "-", Stdin: strings.NewReader("")},
		"public on env":   {Getenv: env(map[string]string{EnvKey: k.recipient})},
		"missing envfile": {Getenv: env(map[string]string{EnvKeyFile: filepath.Join(dir, "nope")})},
	} {
		_, err := Read(in)
		if err == nil || !verify.IsInput(err) {
			t.Errorf("%s: want an input error, got %v", name, err)
			continue
		}
		hygiene(t, name, err.Error())
	}
}

// fixture: dev and prod with different keys, plus a stranger's key.
type fixture struct {
	repo             string
	dev, prod, other key
}

func newFixture(t *testing.T, extraDev map[string]string) fixture {
	t.Helper()
	f := fixture{repo: t.TempDir(), dev: newKey(t), prod: newKey(t), other: newKey(t)}
	if err := agekeytest.WriteRepo(f.repo,
		agekeytest.Env{Name: "dev", Recipients: []string{f.dev.recipient}, Value: "dev-value", Extra: extraDev},
		agekeytest.Env{Name: "prod", Recipients: []string{f.prod.recipient}, Value: "prod-value"},
	); err != nil {
		t.Fatal(err)
	}
	return f
}

func parse(t *testing.T, files ...string) *Identities {
	t.Helper()
	ids, err := Parse([]byte(strings.Join(files, "\n")), "test")
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func scan(t *testing.T, repo, env string) *Scope {
	t.Helper()
	s, err := Scan(repo, env, DefaultNamespace, DefaultSecretName, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func verdicts(cs []verify.Check) map[string]verify.Verdict {
	m := map[string]verify.Verdict{}
	for _, c := range cs {
		m[c.ID] = c.Verdict
	}
	return m
}

func find(t *testing.T, cs []verify.Check, id string) verify.Check {
	t.Helper()
	for _, c := range cs {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("no check %s in %v", id, verdicts(cs))
	return verify.Check{}
}

func TestTwoEnvironments(t *testing.T) {
	isolate(t)
	f := newFixture(t, nil)
	const file = "apps/dev/secret.sops.yaml"
	const prodFile = "apps/prod/secret.sops.yaml"

	dev := scan(t, f.repo, "clusters/dev")
	if len(dev.Files) != 1 || dev.Files[0].Path != file {
		t.Fatalf("dev files: %+v", dev.Files)
	}
	if len(dev.Kustomizations) != 2 || len(dev.Uses()) != 1 {
		t.Fatalf("dev Kustomizations: %+v", dev.Kustomizations)
	}

	t.Run("right key", func(t *testing.T) {
		cs, n := RepositoryChecks(parse(t, f.dev.file), dev, verify.Before, false)
		want := map[string]verify.Verdict{"age-key.scope": verify.Pass, "age-key.recipient/" + file: verify.Pass, "age-key.decrypt/" + file: verify.Pass, "age-key.sops-config": verify.Pass}
		if got := verdicts(cs); n != 1 || !equal(got, want) {
			t.Errorf("decrypted %d, verdicts %v", n, got)
		}
		reportHygiene(t, report(cs))
		// The same scope proves again: the install's after-gate reuses it.
		if _, n := RepositoryChecks(parse(t, f.dev.file), dev, verify.After, false); n != 1 {
			t.Errorf("second test-decrypt of the same scope decrypted %d", n)
		}
	})
	t.Run("another environment's key", func(t *testing.T) {
		cs, n := RepositoryChecks(parse(t, f.prod.file), dev, verify.Before, false)
		rc := find(t, cs, "age-key.recipient/"+file)
		dc := find(t, cs, "age-key.decrypt/"+file)
		if n != 0 || rc.Verdict != verify.Fail || dc.Verdict != verify.Fail {
			t.Fatalf("want recipient and decrypt to fail: %v", verdicts(cs))
		}
		for _, s := range []string{file, f.dev.recipient, f.prod.recipient, "sops updatekeys"} {
			if !strings.Contains(rc.Message, s) {
				t.Errorf("recipient message %q lacks %q", rc.Message, s)
			}
		}
		if !strings.Contains(dc.Message, "does not decrypt") {
			t.Errorf("decrypt message: %q", dc.Message)
		}
		if c := find(t, cs, "age-key.sops-config"); c.Verdict != verify.Warn {
			t.Errorf(".sops.yaml rule lacks the key: want warn, got %v", c)
		}
		r := report(cs)
		if session.ReportCode(r) != session.ExitFailed {
			t.Errorf("exit %d", session.ReportCode(r))
		}
		reportHygiene(t, r)
	})
	t.Run("--force turns failures into warnings", func(t *testing.T) {
		cs, _ := RepositoryChecks(parse(t, f.prod.file), dev, verify.Before, true)
		if r := report(cs); session.ReportCode(r) != session.ExitOK {
			t.Errorf("exit %d: %v", session.ReportCode(r), verdicts(cs))
		}
		if c := find(t, cs, "age-key.decrypt/"+file); c.Verdict != verify.Warn || !strings.Contains(c.Message, "--force") {
			t.Errorf("%+v", c)
		}
	})
	t.Run("both keys in one file decrypt both environments", func(t *testing.T) {
		both := parse(t, f.dev.file, f.prod.file)
		for env, path := range map[string]string{"clusters/dev": file, "clusters/prod": prodFile} {
			cs, n := RepositoryChecks(both, scan(t, f.repo, env), verify.Before, false)
			if n != 1 || find(t, cs, "age-key.decrypt/"+path).Verdict != verify.Pass {
				t.Errorf("%s: %v", env, verdicts(cs))
			}
		}
	})
}

func TestFileEncryptedToSomeoneElse(t *testing.T) {
	isolate(t)
	other := newKey(t)
	enc, err := agekeytest.EncryptedSecret("stranger", "x", other.recipient)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, map[string]string{"stranger.sops.yaml": enc})
	cs, n := RepositoryChecks(parse(t, f.dev.file), scan(t, f.repo, "clusters/dev"), verify.Before, false)
	if n != 1 {
		t.Errorf("decrypted %d, want 1 of 2", n)
	}
	if find(t, cs, "age-key.decrypt/apps/dev/secret.sops.yaml").Verdict != verify.Pass {
		t.Error("own file should decrypt")
	}
	rc := find(t, cs, "age-key.recipient/apps/dev/stranger.sops.yaml")
	if rc.Verdict != verify.Fail || !strings.Contains(rc.Message, other.recipient) {
		t.Errorf("stranger's file: %+v", rc)
	}
}

func TestScopeNothingToProve(t *testing.T) {
	isolate(t)
	k := newKey(t)
	repo := t.TempDir()
	if err := agekeytest.WriteRepo(repo, agekeytest.Env{Name: "dev", Recipients: []string{k.recipient}, SecretRef: "other-secret"}); err != nil {
		t.Fatal(err)
	}
	s := scan(t, repo, "clusters/dev")
	cs, _ := RepositoryChecks(parse(t, k.file), s, verify.Before, false)
	c := find(t, cs, "age-key.scope")
	if c.Verdict != verify.Skip || session.ReportCode(report(cs)) != session.ExitIncomplete {
		t.Errorf("no file decrypted with sops-age: want skip/exit 3, got %+v", c)
	}
	if !strings.Contains(strings.Join(c.Evidence, "\n"), "decrypts with Secret other-secret") {
		t.Errorf("evidence should name the other Secret: %v", c.Evidence)
	}
	cs, _ = RepositoryChecks(parse(t, k.file), s, verify.Before, true)
	if c := find(t, cs, "age-key.scope"); c.Verdict != verify.Warn {
		t.Errorf("--force: %+v", c)
	}
}

func TestScanInputErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	for name, args := range map[string][2]string{
		"missing env":   {f.repo, "clusters/staging"},
		"escaping path": {f.repo, "../x"},
		"missing repo":  {filepath.Join(f.repo, "nope"), "clusters/dev"},
	} {
		_, err := Scan(args[0], args[1], DefaultNamespace, DefaultSecretName, nil)
		if err == nil || !verify.IsInput(err) {
			t.Errorf("%s: want an input error, got %v", name, err)
		}
	}
	_, err := Scan(f.repo, "clusters/staging", DefaultNamespace, DefaultSecretName, nil)
	if err == nil || !strings.Contains(err.Error(), "dev, prod") {
		t.Errorf("missing env should list the environments: %v", err)
	}
}

func TestTamperedFileFailsMAC(t *testing.T) {
	isolate(t)
	f := newFixture(t, nil)
	p := filepath.Join(f.repo, "apps/dev/secret.sops.yaml")
	b, _ := os.ReadFile(p)
	// Drop the MAC: sops refuses a file whose MAC does not gate.
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "mac:") {
			l = "    mac: ENC[AES256_GCM,data:AAAA,iv:AAAAAAAAAAAAAAAAAAAAAA==,tag:AAAAAAAAAAAAAAAAAAAAAA==,type:str]"
		}
		out = append(out, l)
	}
	if err := os.WriteFile(p, []byte(strings.Join(out, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	cs, n := RepositoryChecks(parse(t, f.dev.file), scan(t, f.repo, "clusters/dev"), verify.Before, false)
	if n != 0 || find(t, cs, "age-key.decrypt/apps/dev/secret.sops.yaml").Verdict != verify.Fail {
		t.Errorf("tampered MAC should fail: %v", verdicts(cs))
	}
}

func TestKeyServiceIgnoresEnvironment(t *testing.T) {
	isolate(t)
	f := newFixture(t, nil)
	// The right key in the environment must not rescue a wrong identity:
	// the test-decrypt uses only what it was given.
	t.Setenv(EnvKey, strings.TrimSpace(lines(f.dev.file)[2]))
	cs, n := RepositoryChecks(parse(t, f.prod.file), scan(t, f.repo, "clusters/dev"), verify.Before, false)
	if n != 0 {
		t.Errorf("decrypted with a key from the environment: %v", verdicts(cs))
	}
}

func TestInstallRefusesBeforeConnecting(t *testing.T) {
	isolate(t)
	f := newFixture(t, nil)
	connect := func() (c client.Client, rm *ssa.ResourceManager, err error) {
		t.Fatal("connected to the cluster although a gate failed")
		return
	}
	r := verify.NewReport("age-key")
	err := Install(context.Background(), r, Input{Flag: "-", Stdin: strings.NewReader(f.prod.file)}, Options{Repo: f.repo, Path: "clusters/dev"}, connect)
	if err != nil {
		t.Fatal(err)
	}
	c := find(t, r.Checks, "age-key.secret-applied")
	if c.Verdict != verify.Skip || !strings.Contains(c.Message, "nothing was changed") || r.Changed {
		t.Errorf("%+v", c)
	}
	if session.ReportCode(r) != session.ExitFailed {
		t.Errorf("exit %d", session.ReportCode(r))
	}
	reportHygiene(t, r)

	err = Install(context.Background(), verify.NewReport("age-key"), Input{Flag: "-", Stdin: strings.NewReader(f.dev.recipient)}, Options{Repo: f.repo, Path: "clusters/dev"}, connect)
	if !verify.IsInput(err) {
		t.Errorf("public key: want an input error, got %v", err)
	}
	err = Install(context.Background(), verify.NewReport("age-key"), Input{Flag: "-", Stdin: strings.NewReader(f.dev.file)}, Options{Repo: f.repo}, connect)
	if !verify.IsInput(err) || !strings.Contains(err.Error(), "--path") {
		t.Errorf("no --path: %v", err)
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	k := newKey(t)
	s := "oops: " + lines(k.file)[2] + " and " + strings.ToLower(lines(k.file)[2])
	hygiene(t, "redacted", Redact(s))
	r := verify.NewReport("x")
	r.Add(verify.Check{ID: "a", Phase: PhaseName, Verdict: verify.Fail, Message: s, Evidence: []string{s}})
	r.Error, r.Facts["k"] = s, s
	RedactReport(r)
	reportHygiene(t, r)
}

func report(cs []verify.Check) *verify.Report {
	r := verify.NewReport("test")
	r.Add(cs...)
	return r
}

func equal(a, b map[string]verify.Verdict) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func sprintAll(ids *Identities) string {
	return fmt.Sprintf("%v %+v %#v %s", ids, ids, ids, ids.Keys)
}

// TestScopeWarnsOnUnbuiltDecryptingKustomization: a Kustomization that
// decrypts with the Secret but whose path does not build cannot have its
// files proven; the scope says so (warn), it does not pass silently.
func TestScopeWarnsOnUnbuiltDecryptingKustomization(t *testing.T) {
	isolate(t)
	f := newFixture(t, nil)
	for name, content := range map[string]string{
		"clusters/dev/broken.yaml":          agekeytest.Kustomization("broken", "apps/broken", DefaultSecretName),
		"apps/broken/kustomization.yaml":    "resources:\n- missing.sops.yaml\n",
		"apps/broken/placeholder.sops.yaml": "not: encrypted\n",
	} {
		p := filepath.Join(f.repo, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := scan(t, f.repo, "clusters/dev")
	cs, n := RepositoryChecks(parse(t, f.dev.file), s, verify.Before, false)
	c := find(t, cs, "age-key.scope")
	if n != 1 || c.Verdict != verify.Warn || !strings.Contains(c.Message, "flux-system/broken") || !strings.Contains(c.Message, "not proven") {
		t.Fatalf("scope: %s %q (decrypted %d)", c.Verdict, c.Message, n)
	}
}

// TestFallbackScope: a Kustomization decrypting with provider sops and no
// secretRef reads kustomize-controller's --sops-age-secret, a Secret in the
// controller's namespace (kustomize-controller v1.9.5 internal/decryptor
// ImportKeys). The key's scope follows the flag: its files are proven when
// the flag names the Secret being installed, and not otherwise.
func TestFallbackScope(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	dev := newKey(t)
	if err := agekeytest.WriteRepo(dir, agekeytest.Env{Name: "dev", Recipients: []string{dev.recipient}, Value: "v", SecretRef: agekeytest.FallbackRef}); err != nil {
		t.Fatal(err)
	}
	const file = "apps/dev/secret.sops.yaml"
	for _, tc := range []struct {
		name  string
		fb    *Fallback
		files int
		note  string
	}{
		{"the flag names the Secret", &Fallback{Name: DefaultSecretName, Namespace: DefaultNamespace, From: "render"}, 1, ""},
		{"the flag is unknown", nil, 0, "--sops-age-secret, which was not read"},
		{"the controller runs without the flag", &Fallback{Namespace: DefaultNamespace, From: "render"}, 0, "runs without --sops-age-secret"},
		{"the flag names another Secret", &Fallback{Name: "other", Namespace: DefaultNamespace, From: "render"}, 0, "Secret flux-system/other (render), not flux-system/sops-age"},
		{"the controller runs in another namespace", &Fallback{Name: DefaultSecretName, Namespace: "flux", From: "render"}, 0, "Secret flux/sops-age (render)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Scan(dir, "clusters/dev", DefaultNamespace, DefaultSecretName, tc.fb)
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Files) != tc.files || len(s.Uses()) != tc.files {
				t.Fatalf("files %+v, uses %+v, want %d", s.Files, s.Uses(), tc.files)
			}
			cs, n := RepositoryChecks(parse(t, dev.file), s, verify.Before, false)
			got := verdicts(cs)
			if tc.files == 1 {
				want := map[string]verify.Verdict{"age-key.scope": verify.Pass, "age-key.recipient/" + file: verify.Pass, "age-key.decrypt/" + file: verify.Pass, "age-key.sops-config": verify.Pass}
				if n != 1 || !equal(got, want) {
					t.Errorf("decrypted %d, verdicts %v", n, got)
				}
				return
			}
			if got["age-key.scope"] != verify.Skip {
				t.Errorf("scope %v, want skip: nothing proves the key", got["age-key.scope"])
			}
			if !strings.Contains(strings.Join(s.Notes, "\n"), tc.note) {
				t.Errorf("notes %q lack %q", s.Notes, tc.note)
			}
		})
	}
}

// TestScopeWarnsWithoutTheFallback: the key proves the files it decrypts,
// but a Kustomization decrypting with provider sops and no secretRef where
// kustomize-controller runs without --sops-age-secret would decrypt none of
// its own: the scope passes no more, it warns, naming it.
func TestScopeWarnsWithoutTheFallback(t *testing.T) {
	isolate(t)
	f := newFixture(t, nil)
	s := scan(t, f.repo, "clusters/dev")
	cs, _ := RepositoryChecks(parse(t, f.dev.file), s, verify.Before, false)
	if c := find(t, cs, GateScope.ID); c.Verdict != verify.Pass {
		t.Fatalf("precondition: %s %s", c.Verdict, c.Message)
	}
	s.NoFallback = []string{"flux-system/global"}
	cs, _ = RepositoryChecks(parse(t, f.dev.file), s, verify.Before, false)
	if c := find(t, cs, GateScope.ID); c.Verdict != verify.Warn || !strings.Contains(c.Message, "flux-system/global decrypt with provider sops and no secretRef") {
		t.Errorf("%s %s, want a warning naming the Kustomization", c.Verdict, c.Message)
	}
}
