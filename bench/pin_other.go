//go:build !linux

package bench

// pinning is Linux only: elsewhere the bench measures on shared cores.
type pinning struct{}

func newPinning() (*pinning, bool) { return nil, false }

func (*pinning) cpus() (servers, all int) { return 0, 0 }

func (*pinning) apply(_, _ []int) error { return nil }

func (*pinning) release([]int) error { return nil }
