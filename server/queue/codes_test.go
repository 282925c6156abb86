package queue_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestCodesDefinedInOnePlace: every API error code is a constant of
// server/queue/errors.go. Elsewhere in the module, no constant or variable
// of type queue.Code is declared, no string literal is turned into a Code,
// and no error body's Code field is a string literal.
func TestCodesDefinedInOnePlace(t *testing.T) {
	root := filepath.Join("..", "..")
	home := filepath.Join("server", "queue", "errors.go")
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || rel == home {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		files++
		inQueue := f.Name.Name == "queue" && filepath.Dir(rel) == filepath.Join("server", "queue")
		// isCode reports whether e names the Code type: queue.Code, or Code inside the package.
		isCode := func(e ast.Expr) bool {
			switch x := e.(type) {
			case *ast.SelectorExpr:
				id, ok := x.X.(*ast.Ident)
				return ok && id.Name == "queue" && x.Sel.Name == "Code"
			case *ast.Ident:
				return inQueue && x.Name == "Code"
			}
			return false
		}
		isString := func(e ast.Expr) bool {
			lit, ok := e.(*ast.BasicLit)
			return ok && lit.Kind == token.STRING
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.ValueSpec:
				if x.Type != nil && isCode(x.Type) {
					t.Errorf("%s: declares a Code (%s) outside %s", fset.Position(x.Pos()), x.Names[0].Name, home)
				}
			case *ast.CallExpr:
				if len(x.Args) == 1 && isCode(x.Fun) && isString(x.Args[0]) {
					t.Errorf("%s: makes the Code %s from a literal, outside %s", fset.Position(x.Pos()), x.Args[0].(*ast.BasicLit).Value, home)
				}
			case *ast.KeyValueExpr:
				if k, ok := x.Key.(*ast.Ident); ok && k.Name == "Code" && isString(x.Value) {
					t.Errorf("%s: sets Code to the literal %s, outside %s", fset.Position(x.Pos()), x.Value.(*ast.BasicLit).Value, home)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("read %d Go files under %s, want the whole module", files, root)
	}
}
