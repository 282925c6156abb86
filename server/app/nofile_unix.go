//go:build unix

package app

import "syscall"

// raiseFileLimit lifts the soft limit of open descriptors to the hard one,
// since every open stream holds one, and returns the limit now in force.
func raiseFileLimit() (uint64, error) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0, err
	}
	if r.Cur < r.Max {
		raised := r
		raised.Cur = r.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err != nil {
			return uint64(r.Cur), err
		}
		r = raised
	}
	return uint64(r.Cur), nil
}
