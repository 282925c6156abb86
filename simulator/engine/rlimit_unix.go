//go:build unix

package engine

import "syscall"

// raiseFDLimit raises the soft limit on open descriptors to the hard one
// and returns it.
func raiseFDLimit() int {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 1024
	}
	if l.Cur < l.Max {
		l.Cur = l.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l) != nil {
			_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l)
		}
	}
	return int(min(l.Cur, 1<<24))
}
