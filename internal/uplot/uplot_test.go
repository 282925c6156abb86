package uplot

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVendoredOnce: the module holds uPlot's files here only: no other file
// is named like one or has the same bytes as one.
func TestVendoredOnce(t *testing.T) {
	root := filepath.Join("..", "..")
	here, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	vendored := map[string]string{"uPlot.iife.min.js": JS, "uPlot.min.css": CSS, "uPlot.LICENSE": License}
	for name, data := range vendored {
		if len(data) < 500 {
			t.Fatalf("%s is %d bytes: not embedded", name, len(data))
		}
	}
	seen := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		abs, err := filepath.Abs(path)
		if err != nil || filepath.Dir(abs) == here {
			return err
		}
		seen++
		if strings.HasPrefix(d.Name(), "uPlot.") {
			t.Errorf("%s: a second copy of uPlot's files; use internal/uplot", path)
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		for name, data := range vendored {
			if info.Size() != int64(len(data)) {
				continue
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if bytes.Equal(b, []byte(data)) {
				t.Errorf("%s is a copy of %s; use internal/uplot", path, name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 100 {
		t.Fatalf("walked %d files under %s, want the whole module", seen, root)
	}
}

// TestScriptCarriesTheLicence: the inline script starts with the licence in
// a comment that the licence's own text cannot close early.
func TestScriptCarriesTheLicence(t *testing.T) {
	s := Script()
	head, body, ok := strings.Cut(s, "\n*/\n")
	if !ok || body != JS {
		t.Fatalf("Script is not a comment followed by the library (%d bytes)", len(s))
	}
	if !strings.HasPrefix(head, "/*! uPlot "+Version) || !strings.Contains(head, "MIT License") || strings.Contains(head[2:], "*/") {
		t.Errorf("comment = %.120q…, want uPlot %s's MIT licence, unbroken", head, Version)
	}
}
