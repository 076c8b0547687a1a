package session

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestExitCodesDecidedHereOnly: Code is the one place an outcome becomes
// an exit code. It fails when a library ends the process (os.Exit outside
// a main package, or in bootstrap's own main package outside main.go) or
// names an exit code (the Exit constants outside this package and
// cmd/bootstrap, which passes them on).
func TestExitCodesDecidedHereOnly(t *testing.T) {
	root := filepath.Join("..", "..")
	constant := regexp.MustCompile(`^Exit(OK|Failed|Input|Incomplete)$`)
	var bad []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if (path != root && strings.HasPrefix(d.Name(), ".")) || d.Name() == "testdata" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "os" && n.Sel.Name == "Exit" &&
					(f.Name.Name != "main" || (strings.HasPrefix(rel, "cmd/bootstrap/") && rel != "cmd/bootstrap/main.go")) {
					bad = append(bad, rel+": os.Exit outside a main function")
				}
			case *ast.Ident:
				if constant.MatchString(n.Name) && !strings.HasPrefix(rel, "internal/session/") && !strings.HasPrefix(rel, "cmd/bootstrap/") {
					bad = append(bad, rel+": names an exit code ("+n.Name+"); return a typed error or a verdict and let session.Code decide")
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// TestSessionDoesNotImportAgekey: the report writer redacts age identities
// with internal/redact's rule, not by importing the key handling.
func TestSessionDoesNotImportAgekey(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if strings.HasSuffix(strings.Trim(imp.Path.Value, `"`), "/internal/agekey") {
				t.Errorf("%s imports %s", name, imp.Path.Value)
			}
		}
	}
}
