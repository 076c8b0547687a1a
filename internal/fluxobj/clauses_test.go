package fluxobj

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// clauseLiterals are the places under root where a non-test Go file
// outside skip spells a clause's words as a string literal, each
// file:line: "clause". Test files are left out (they assert the words a
// person reads in messages), and so are testdata, hidden and vendored
// directories.
func clauseLiterals(root, skip string) ([]string, error) {
	words := map[string]bool{}
	for _, c := range Clauses {
		words[string(c)] = true
	}
	var out []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || name == "node_modules") {
				return filepath.SkipDir
			}
			if skip != "" && path == skip {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if v, err := strconv.Unquote(lit.Value); err == nil && words[v] {
				rel, _ := filepath.Rel(root, path)
				out = append(out, fmt.Sprintf("%s:%d: %q", rel, fset.Position(lit.Pos()).Line, v))
			}
			return true
		})
		return nil
	})
	return out, err
}

// TestClauseNamesOnlyHere: no Go file of the module outside this package
// spells a clause's words as a literal; code compares the Clause
// constants, so a clause has one home and a renamed one cannot leave a
// stale comparison behind (converge once matched "observed its
// generation" as a literal).
func TestClauseNamesOnlyHere(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found at %s: %v", root, err)
	}
	self, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	found, err := clauseLiterals(root, self)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Errorf("clause names spelled as literals outside internal/fluxobj (use the fluxobj.Clause constants):\n%s", strings.Join(found, "\n"))
	}
}

// TestClauseLiteralsFound is the negative control of the scan: a literal
// clause name in a Go file is found, in a test file, testdata or through
// the constant it is not.
func TestClauseLiteralsFound(t *testing.T) {
	for _, tc := range []struct {
		name, file, src string
		want            []string
	}{
		{"literal in code", "a/a.go", `package a; func f(s string) bool { return s == "observed its generation" }`,
			[]string{`a/a.go:1: "observed its generation"`}},
		{"raw string literal", "a/a.go", "package a\n\nvar x = `released its source's chart`",
			[]string{`a/a.go:3: "released its source's chart"`}},
		{"through the constant", "a/a.go", `package a; import "x/fluxobj"; var x = fluxobj.ClauseExists`, nil},
		{"another string", "a/a.go", `package a; var x = "observed its generation twice"`, nil},
		{"test file", "a/a_test.go", `package a; var x = "not stalled"`, nil},
		{"testdata", "a/testdata/a.go", `package a; var x = "not stalled"`, nil},
		{"the skipped package", "fluxobj/a.go", `package fluxobj; var x = "not stalled"`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			p := filepath.Join(root, filepath.FromSlash(tc.file))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(tc.src), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := clauseLiterals(root, filepath.Join(root, "fluxobj"))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
