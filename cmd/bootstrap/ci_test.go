package main

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// ciHelperEnv makes this test binary act as the bootstrap binary (the
// os/exec tests' helper-process pattern), so the CI script runs a real
// bootstrap without a second build of the module.
const ciHelperEnv = "GO_WANT_BOOTSTRAP_CLI"

// TestCIHelperProcess is not a test: it is bootstrap, when ciHelperEnv is set.
// Not parallel: it is a process of its own, reading the process's
// environment (os.Getenv) as the binary does, and it exits.
func TestCIHelperProcess(t *testing.T) {
	if os.Getenv(ciHelperEnv) != "1" {
		t.Skip("the bootstrap CLI for TestCIScript")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	os.Exit(run(context.Background(), args, genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, os.Getenv))
}

// sarifDoc is the part of a SARIF 2.1.0 log the CI test reads.
type sarifDoc struct {
	Runs []struct {
		Results []struct {
			RuleID  string `json:"ruleId"`
			Level   string `json:"level"`
			Message struct {
				Text string `json:"text"`
			} `json:"message"`
			Locations []struct {
				PhysicalLocation struct {
					ArtifactLocation struct {
						URI string `json:"uri"`
					} `json:"artifactLocation"`
					Region struct {
						StartLine int `json:"startLine"`
					} `json:"region"`
				} `json:"physicalLocation"`
			} `json:"locations"`
		} `json:"results"`
	} `json:"runs"`
}

// TestCIScript runs hack/ci/check.sh, the script every step of action.yml
// calls, as CI would: against our fixture repositories (testdata/ci), with
// an installed binary or installing one from an archive whose sha256 is
// pinned. It reads the SARIF file's locations: the finding is where the
// undefined variable is (file and line), which is where code scanning
// annotates the diff.
func TestCIScript(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("the CI script is bash")
	}
	for _, tool := range []string{"bash", "curl", "tar", "sha256sum"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed: %v", tool, err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "bootstrap")
	wrapper := "#!/bin/sh\n" + ciHelperEnv + "=1 exec '" + self + "' -test.run='^TestCIHelperProcess$' -- \"$@\"\n"
	if err := os.WriteFile(bin, []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	// A release archive as hack/dist.sh lays it out, holding the wrapper.
	version := "v0.0.0-citest"
	name := "bootstrap_" + version + "_" + runtime.GOOS + "_" + runtime.GOARCH
	archive := filepath.Join(t.TempDir(), name+".tar.gz")
	writeArchive(t, archive, name+"/bootstrap", []byte(wrapper))
	b, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	goodSum := hex.EncodeToString(sum[:])
	badSum := strings.Repeat("0", 64)

	script, err := filepath.Abs("../../hack/ci/check.sh")
	if err != nil {
		t.Fatal(err)
	}
	fixtures, err := filepath.Abs("../../testdata/ci")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		env     map[string]string
		code    int
		stderr  string
		absent  string // never in the output (a credential)
		finding string // the SARIF result's "file:line"; "" for none
		outputs bool   // SARIF and JUnit written
	}{
		{name: "clean passes", env: map[string]string{"CHECK_BIN": bin, "CHECK_REPO": fixtures + "/clean", "CHECK_ENV": "dev"},
			code: 0, stderr: "check passed", outputs: true},
		{name: "undefined variable fails at its line", env: map[string]string{"CHECK_BIN": bin, "CHECK_REPO": fixtures + "/undefined", "CHECK_PATH": "clusters/dev"},
			code: 1, stderr: "audience_name", finding: "apps/config.yaml:8", outputs: true},
		// Issue 45: no CHECK_ENV/CHECK_PATH checks every cluster root.
		{name: "no environment: every cluster, clean", env: map[string]string{"CHECK_BIN": bin, "CHECK_REPO": fixtures + "/clean"},
			code: 0, stderr: "check passed", outputs: true},
		{name: "no environment: every cluster, the defect at its line", env: map[string]string{"CHECK_BIN": bin, "CHECK_REPO": fixtures + "/undefined"},
			code: 1, stderr: "clusters.dev:check.substitution", finding: "apps/config.yaml:8", outputs: true},
		{name: "extra args reach check", env: map[string]string{"CHECK_BIN": bin, "CHECK_REPO": fixtures + "/clean", "CHECK_ENV": "dev", "CHECK_ARGS": "--flux-version v9.9.9"},
			code: 2, stderr: "v9.9.9"},
		{name: "extra args on several lines all reach check", env: map[string]string{"CHECK_BIN": bin, "CHECK_REPO": fixtures + "/clean", "CHECK_ENV": "dev", "CHECK_ARGS": "--no-compare\n--flux-version v9.9.9\n"},
			code: 2, stderr: "v9.9.9"},
		{name: "a bare name is looked up on PATH", env: map[string]string{"CHECK_BIN": "bootstrap", "PATH": filepath.Dir(bin) + ":" + os.Getenv("PATH"), "CHECK_REPO": fixtures + "/clean", "CHECK_ENV": "dev"},
			code: 0, stderr: "check passed", outputs: true},
		{name: "a URL's credentials never reach the log", env: map[string]string{"CHECK_VERSION": version, "CHECK_SHA256": goodSum, "CHECK_URL": "https://ci:s3cret-token@127.0.0.1:1/x.tar.gz?sig=s3cret-sig",
			"CHECK_REPO": fixtures + "/clean", "CHECK_ENV": "dev"},
			code: 2, stderr: "download of https://***@127.0.0.1:1/x.tar.gz?*** failed", absent: "s3cret"},
		{name: "installs the pinned archive and checks", env: map[string]string{"CHECK_VERSION": version, "CHECK_SHA256": goodSum, "CHECK_URL": "file://" + archive,
			"CHECK_REPO": fixtures + "/undefined", "CHECK_ENV": "dev"},
			code: 1, stderr: "OK", finding: "apps/config.yaml:8", outputs: true},
		{name: "an archive without the pinned sum is refused", env: map[string]string{"CHECK_VERSION": version, "CHECK_SHA256": badSum, "CHECK_URL": "file://" + archive,
			"CHECK_REPO": fixtures + "/clean", "CHECK_ENV": "dev"},
			code: 2, stderr: "does not have the pinned sha256"},
		{name: "no sum, no install", env: map[string]string{"CHECK_VERSION": version, "CHECK_URL": "file://" + archive, "CHECK_REPO": fixtures + "/clean", "CHECK_ENV": "dev"},
			code: 2, stderr: "CHECK_SHA256 must be"},
		{name: "no binary, no version", env: map[string]string{"CHECK_REPO": fixtures + "/clean", "CHECK_ENV": "dev"},
			code: 2, stderr: "set CHECK_BIN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			work := t.TempDir()
			cmd := exec.Command("bash", script)
			cmd.Dir = work
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + work, "KUBECONFIG=" + filepath.Join(work, "none"),
				"CHECK_INSTALL_DIR=" + work, "GITHUB_OUTPUT=" + filepath.Join(work, "github-output")}
			for k, v := range tt.env {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.code || !strings.Contains(string(out), tt.stderr) {
				t.Fatalf("exit %d, want %d and %q in the output:\n%s", code, tt.code, tt.stderr, out)
			}
			if tt.absent != "" && strings.Contains(string(out), tt.absent) {
				t.Fatalf("%q in the output:\n%s", tt.absent, out)
			}
			sarifFile, junitFile := filepath.Join(work, "bootstrap.sarif"), filepath.Join(work, "bootstrap-junit.xml")
			if !tt.outputs {
				return
			}
			gh, err := os.ReadFile(filepath.Join(work, "github-output"))
			if err != nil || !strings.Contains(string(gh), "sarif=bootstrap.sarif") {
				t.Errorf("GITHUB_OUTPUT: %q, %v", gh, err)
			}
			var junit struct {
				Tests    int `xml:"tests,attr"`
				Failures int `xml:"failures,attr"`
			}
			if b, err := os.ReadFile(junitFile); err != nil || xml.Unmarshal(b, &junit) != nil || junit.Tests == 0 {
				t.Errorf("JUnit file %s: %v %+v", junitFile, err, junit)
			} else if (junit.Failures > 0) != (tt.code == 1) {
				t.Errorf("JUnit failures=%d with exit %d", junit.Failures, tt.code)
			}
			b, err := os.ReadFile(sarifFile)
			if err != nil {
				t.Fatalf("SARIF file: %v", err)
			}
			var doc sarifDoc
			if err := json.Unmarshal(b, &doc); err != nil || len(doc.Runs) != 1 {
				t.Fatalf("SARIF %s: %v (%d runs)", sarifFile, err, len(doc.Runs))
			}
			var found []string
			for _, r := range doc.Runs[0].Results {
				if r.Level != "error" {
					continue
				}
				for _, l := range r.Locations {
					found = append(found, l.PhysicalLocation.ArtifactLocation.URI+":"+strconv.Itoa(l.PhysicalLocation.Region.StartLine))
				}
				if tt.finding != "" && !strings.Contains(r.Message.Text, "audience_name") {
					t.Errorf("SARIF result %s does not name the variable: %s", r.RuleID, r.Message.Text)
				}
			}
			want := []string(nil)
			if tt.finding != "" {
				want = []string{tt.finding}
			}
			if strings.Join(found, ",") != strings.Join(want, ",") {
				t.Errorf("SARIF error locations %v, want %v", found, want)
			}
		})
	}
}

// writeArchive writes a tar.gz holding one executable file.
func writeArchive(t *testing.T, path, name string, content []byte) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(content); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
}
