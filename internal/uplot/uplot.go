// Package uplot vendors the uPlot chart library once for every page that
// draws charts: the web pages serve its files, and the offline reports (the
// simulator's, the capacity plan's and the bench's) inline them. README.md
// says where the files come from and how to update them.
package uplot

import (
	_ "embed"
	"strings"
)

// Version is the vendored uPlot's version.
const Version = "1.6.32"

var (
	// JS is uPlot's script (uPlot.iife.min.js).
	//go:embed uPlot.iife.min.js
	JS string
	// CSS is uPlot's stylesheet (uPlot.min.css).
	//go:embed uPlot.min.css
	CSS string
	// License is uPlot's MIT licence (uPlot.LICENSE).
	//go:embed uPlot.LICENSE
	License string
)

// Script is JS with its licence in a leading comment, ready to inline in an
// offline page: the licence travels with the code it covers.
func Script() string {
	return "/*! uPlot " + Version + ", MIT licence:\n\n" + strings.ReplaceAll(License, "*/", "* /") + "\n*/\n" + JS
}
