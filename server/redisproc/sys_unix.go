//go:build unix

package redisproc

import (
	"os"
	"syscall"
)

func signalTerm(p *os.Process) error { return p.Signal(syscall.SIGTERM) }

// killGroup sends SIGKILL to the child's process group (its pgid is its pid).
func killGroup(p *os.Process) error {
	if err := syscall.Kill(-p.Pid, syscall.SIGKILL); err != nil && err != syscall.ESRCH {
		return err
	}
	return nil
}
