package httpapi_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeysComparedInConstantTime fails when the server's code compares a
// configured key (Keys.Admin, .Simulator, .Service, .JWTSecret) with == or
// != instead of auth.Equal, whose time does not depend on where the keys
// differ.
func TestKeysComparedInConstantTime(t *testing.T) {
	t.Parallel()
	var files []string
	for _, dir := range []string{".", "../auth", "../app", "../practice", ".."} {
		names, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if !strings.HasSuffix(n, "_test.go") {
				files = append(files, n)
			}
		}
	}
	if len(files) < 10 {
		t.Fatalf("found only %d source files: %v", len(files), files)
	}
	isKey := func(e ast.Expr) bool {
		sel, ok := e.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		switch sel.Sel.Name {
		case "Admin", "Simulator", "Service", "JWTSecret":
		default:
			return false
		}
		inner, ok := sel.X.(*ast.SelectorExpr)
		if ok && inner.Sel.Name == "Keys" {
			return true
		}
		id, ok := sel.X.(*ast.Ident)
		return ok && (id.Name == "keys" || id.Name == "k" || id.Name == "given")
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatalf("parse %s: %v", name, err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(ast.Expr); ok && isKey(sel) {
				checked++
			}
			b, ok := n.(*ast.BinaryExpr)
			if !ok || (b.Op != token.EQL && b.Op != token.NEQ) {
				return true
			}
			if isKey(b.X) || isKey(b.Y) {
				// Comparing with "" (is a key set?) reveals nothing of its value.
				if lit, ok := b.Y.(*ast.BasicLit); ok && lit.Value == `""` {
					return true
				}
				if lit, ok := b.X.(*ast.BasicLit); ok && lit.Value == `""` {
					return true
				}
				t.Errorf("%s: a key compared with %s; use auth.Equal", fset.Position(b.Pos()), b.Op)
			}
			return true
		})
	}
	// The scan must see the keys in use, or it proves nothing.
	if checked < 5 {
		t.Fatalf("saw only %d uses of keys", checked)
	}
	// keyCheck gets the presented key as a plain string: it must hand it to auth.Equal
	// and compare nothing but "" itself.
	f, err := parser.ParseFile(fset, "credentials.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "keyCheck" {
			continue
		}
		found = true
		usesEqual := false
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && id.Name == "auth" && n.Sel.Name == "Equal" {
					usesEqual = true
				}
			case *ast.BinaryExpr:
				_, lx := n.X.(*ast.BasicLit)
				_, ly := n.Y.(*ast.BasicLit)
				if (n.Op == token.EQL || n.Op == token.NEQ) && !lx && !ly {
					t.Errorf("%s: keyCheck compares two values with %s", fset.Position(n.Pos()), n.Op)
				}
			}
			return true
		})
		if !usesEqual {
			t.Error("keyCheck does not call auth.Equal")
		}
	}
	if !found {
		t.Fatal("no keyCheck in credentials.go")
	}
}
