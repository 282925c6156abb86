//go:build !unix

package engine

// raiseFDLimit returns a conservative descriptor limit where there is no
// rlimit to raise.
func raiseFDLimit() int { return 8192 }
