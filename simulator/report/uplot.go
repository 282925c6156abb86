package report

import "strings"

// UPlot returns the vendored uPlot's version, script, stylesheet and licence,
// so other offline pages (the capacity plan's) can inline the same copy.
func UPlot() (version, js, css, license string) { return uplotVersion, uplotJS, uplotCSS, uplotLicense }

// UPlotScript is the vendored uPlot's script with its licence in a leading
// comment, ready to inline in an offline page: the licence travels with the
// code it covers.
func UPlotScript() string {
	return "/*! uPlot " + uplotVersion + ", MIT licence:\n\n" + strings.ReplaceAll(uplotLicense, "*/", "* /") + "\n*/\n" + uplotJS
}
