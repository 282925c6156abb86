package report

// UPlot returns the vendored uPlot's version, script, stylesheet and licence,
// so other offline pages (the capacity plan's) can inline the same copy.
func UPlot() (version, js, css, license string) { return uplotVersion, uplotJS, uplotCSS, uplotLicense }
