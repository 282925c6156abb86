//go:build !unix

package app

import "errors"

// raiseFileLimit knows no descriptor limit here.
func raiseFileLimit() (uint64, error) { return 0, errors.New("no descriptor limit on this system") }
