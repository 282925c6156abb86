// Package web holds rushline's browser pages, embedded into the server binary
// so `make run` needs no build step and the pages make no outside requests.
package web

import (
	"embed"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rushline/rushline/internal/uplot"
)

//go:embed static
var static embed.FS

// FS returns the pages, rooted at static/, with the chart library under
// vendor/: the one vendored copy of uPlot (internal/uplot).
func FS() fs.FS { return tree() }

var tree = sync.OnceValue(func() fs.FS {
	return newMemFS(static, "static", map[string]string{
		"vendor/uPlot.iife.min.js": uplot.JS,
		"vendor/uPlot.min.css":     uplot.CSS,
		"vendor/uPlot.LICENSE":     uplot.License,
	})
})

// memFS is a read-only file tree held in memory: path -> file or folder.
type memFS map[string]*memNode

// memNode is one file or folder; it is its own fs.FileInfo and fs.DirEntry.
type memNode struct {
	name     string
	data     string
	dir      bool
	children []fs.DirEntry // of a folder, by name
}

// newMemFS copies the tree under root of base and adds extra files, whose
// folders it makes as needed.
func newMemFS(base fs.FS, root string, extra map[string]string) memFS {
	m := memFS{".": {name: ".", dir: true}}
	var add func(name, data string, dir bool)
	add = func(name, data string, dir bool) {
		if _, ok := m[name]; ok {
			return
		}
		parent := path.Dir(name)
		add(parent, "", true)
		n := &memNode{name: path.Base(name), data: data, dir: dir}
		m[name] = n
		p := m[parent]
		p.children = append(p.children, n)
		slices.SortFunc(p.children, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	}
	err := fs.WalkDir(base, root, func(name string, d fs.DirEntry, err error) error {
		if err != nil || name == root {
			return err
		}
		rel := strings.TrimPrefix(name, root+"/")
		if d.IsDir() {
			add(rel, "", true)
			return nil
		}
		b, err := fs.ReadFile(base, name)
		add(rel, string(b), false)
		return err
	})
	if err != nil {
		panic(err) // the embedded tree is always readable
	}
	for name, data := range extra {
		add(name, data, false)
	}
	return m
}

// Open opens a file or folder of the tree.
func (m memFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	n, ok := m[name]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	if n.dir {
		return &memDir{node: n}, nil
	}
	return &memFile{node: n, Reader: strings.NewReader(n.data)}, nil
}

func (n *memNode) Name() string               { return n.name }
func (n *memNode) Size() int64                { return int64(len(n.data)) }
func (n *memNode) ModTime() time.Time         { return time.Time{} }
func (n *memNode) IsDir() bool                { return n.dir }
func (n *memNode) Sys() any                   { return nil }
func (n *memNode) Type() fs.FileMode          { return n.Mode().Type() }
func (n *memNode) Info() (fs.FileInfo, error) { return n, nil }

func (n *memNode) Mode() fs.FileMode {
	if n.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}

// memFile is an open file; it seeks, so http.ServeFileFS serves ranges.
type memFile struct {
	node *memNode
	*strings.Reader
}

func (f *memFile) Stat() (fs.FileInfo, error) { return f.node, nil }
func (f *memFile) Close() error               { return nil }

// memDir is an open folder.
type memDir struct {
	node *memNode
	read int
}

func (d *memDir) Stat() (fs.FileInfo, error) { return d.node, nil }
func (d *memDir) Close() error               { return nil }

func (d *memDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.node.name, Err: fs.ErrInvalid}
}

// ReadDir lists the folder's next n entries, or all the rest if n <= 0.
func (d *memDir) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.node.children[d.read:]
	if n > 0 && len(rest) == 0 {
		return nil, io.EOF
	}
	if n > 0 && n < len(rest) {
		rest = rest[:n]
	}
	d.read += len(rest)
	return slices.Clone(rest), nil
}
