package redisproc

import "syscall"

// sysProcAttr puts the child in its own process group, so Kill reaches the
// children it forks, and has the kernel SIGKILL it when the parent dies. Go
// does not end the OS thread that forked it while the program runs, so
// Pdeathsig fires only when the parent exits.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
