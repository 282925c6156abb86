//go:build !unix

package redisproc

import (
	"errors"
	"os"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr { return nil }

// signalTerm kills outright: there is no SIGTERM here.
func signalTerm(p *os.Process) error { return killGroup(p) }

func killGroup(p *os.Process) error {
	if err := p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}
