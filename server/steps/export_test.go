package steps

// Layout is layout, for tests.
var Layout = layout
