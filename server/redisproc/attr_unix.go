//go:build unix && !linux

package redisproc

import "syscall"

// sysProcAttr puts the child in its own process group, so Kill reaches the
// children it forks. Only Linux can tie the child's life to the parent's.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
