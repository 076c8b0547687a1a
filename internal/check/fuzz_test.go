package check

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/envsubst/parse"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// seedLines adds every line of the repository's testdata/ files that holds
// want (and every such file whole, when small) as seeds.
func seedLines(f *testing.F, want string) {
	f.Helper()
	_ = filepath.WalkDir("../../testdata", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), want) {
			return nil
		}
		if len(b) < 2<<10 {
			f.Add(string(b))
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, want) {
				f.Add(l)
			}
		}
		return nil
	})
}

// FuzzSubstExpressions: the ${…} scanner (expressions, rejected, the
// expression writer) over any text: no panic, every expansion it lists is
// shown, and an expansion it writes back (exprText, which the findings
// quote as the fix) parses with the controller's parser
// (fluxcd/pkg/envsubst/parse).
func FuzzSubstExpressions(f *testing.F) {
	seedLines(f, "${")
	for _, s := range []string{"${A}", "${A:=b}", "${A:-${B}}", "$${A}", "${A", "${A/b/c}", "${A:1:2}", "${#A}", "a\n${\nb}", "#${A}\n  ${B}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, e := range expressions(text) {
			if e.show == "" || e.search == "" {
				t.Fatalf("expressions(%q) lists an empty expansion %+v", text, e)
			}
		}
		_ = allCommented(text, "${")
		tree, err := parse.Parse(text)
		if err != nil {
			if len(rejected(text)) == 0 {
				t.Fatalf("parse.Parse(%q) fails (%v), rejected names nothing", text, err)
			}
			return
		}
		walk(tree.Root, func(n *parse.FuncNode) {
			_ = exprOf(n)
			_ = fallbackDefaultText(n)
			_ = isDefaultOp(n.Name)
			s, ok := exprText(n)
			if !ok {
				return
			}
			if _, err := parse.Parse(s); err != nil {
				t.Fatalf("exprText of an expansion of %q is %q, which the parser rejects: %v", text, s, err)
			}
		})
	})
}

// FuzzPolicy: LoadPolicy over any .bootstrap.yaml: no panic, and what it
// refuses is an input error (exit 2 with the file named), never another
// failure.
func FuzzPolicy(f *testing.F) {
	_ = filepath.WalkDir("../../testdata", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == PolicyFile {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
		return nil
	})
	for _, s := range []string{
		"disable:\n- detector: literal\n  reason: we mean it\n",
		"disable:\n- detector: nope\n",
		"prerequisites: [a, b]\n",
		"a: &a [1]\nb: *a\n",
		"unknown: 1\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if int64(len(b)) > MaxPolicyBytes {
			return
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, PolicyFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := LoadPolicy(dir)
		var ie *verify.InputError
		if err != nil && !errors.As(err, &ie) {
			t.Fatalf("LoadPolicy(%q) = %v, not an input error", b, err)
		}
		if err == nil && p == nil {
			t.Fatalf("LoadPolicy(%q) = nil, nil with the file present", b)
		}
	})
}

// TestExprTextLength: the length expansion is written back as written
// (FuzzSubstExpressions found "${#A}" written as "${A#}", which does not
// parse), alone and nested in a default; the other forms are unchanged.
func TestExprTextLength(t *testing.T) {
	for _, tc := range []struct{ in, text, show string }{
		{"${#A}", "${#A}", "${#A}"},
		{"${A:-${#B}}", "${A:-${#B}}", "${A:-…}"},
		{"${A#x}", "${A#x}", "${A#…}"},
		{"${A}", "${A}", "${A}"},
		{"${A:=b}", "${A:=b}", "${A:=…}"},
		{"${A/x/y}", "${A/x/y}", ""},
		// The empty replacement has no argument; ${A/x} does not parse.
		{"${A/x/}", "${A/x/}", ""},
		{"${A//x/}", "${A//x/}", ""},
	} {
		tree, err := parse.Parse(tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		n := tree.Root.(*parse.FuncNode)
		if got, ok := exprText(n); !ok || got != tc.text {
			t.Errorf("exprText(%s) = %q, %v; want %q", tc.in, got, ok, tc.text)
		}
		if tc.show == "" {
			continue
		}
		if e := exprOf(n); e.show != tc.show || !strings.Contains(tc.in, e.search) {
			t.Errorf("exprOf(%s) = %+v; want show %q and a search text found in it", tc.in, e, tc.show)
		}
	}
}
