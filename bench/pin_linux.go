package bench

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// pinning splits this process's CPUs between the measured servers and the
// rest (the load generator and Redis), so that a server's CPU per request
// is its own work: on shared cores it also pays for the others' context
// switches and cold caches, more so the busier Redis is.
type pinning struct {
	servers, rest, all unix.CPUSet
}

// newPinning gives the servers the first half of the CPUs this process may
// use (at least one) and the load generator and Redis the others; ok is
// false with fewer than two CPUs.
func newPinning() (p *pinning, ok bool) {
	p = &pinning{}
	if err := unix.SchedGetaffinity(0, &p.all); err != nil || p.all.Count() < 2 {
		return nil, false
	}
	half, n := p.all.Count()/2, 0
	for cpu := 0; n < p.all.Count(); cpu++ {
		if !p.all.IsSet(cpu) {
			continue
		}
		if n < half {
			p.servers.Set(cpu)
		} else {
			p.rest.Set(cpu)
		}
		n++
	}
	return p, true
}

// apply moves every thread of the servers' processes onto the servers' CPUs
// and every thread of the others (0: this process) onto the rest. A Go
// process's GOMAXPROCS follows its affinity within about a second.
func (p *pinning) apply(servers, others []int) error {
	return errors.Join(setAffinity(servers, &p.servers), setAffinity(others, &p.rest))
}

// release lets every thread of pids run on all the CPUs again.
func (p *pinning) release(pids []int) error { return setAffinity(pids, &p.all) }

// setAffinity sets the CPU affinity of every thread of each process in pids
// (0: this process). Threads the runtime starts later inherit it.
func setAffinity(pids []int, set *unix.CPUSet) error {
	var errs []error
	for _, pid := range pids {
		dir := "/proc/self/task"
		if pid != 0 {
			dir = filepath.Join("/proc", strconv.Itoa(pid), "task")
		}
		tasks, err := os.ReadDir(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			// A thread that has just exited is no error.
			if err := unix.SchedSetaffinity(tid, set); err != nil && !errors.Is(err, unix.ESRCH) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
