package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// pinning splits this process's CPUs between the measured servers and the
// rest (the load generator and Redis), so that a server's CPU per request
// is measured without the others' threads on its cores.
type pinning struct {
	servers, rest, all unix.CPUSet
}

// newPinning gives the servers the first half of the cores this process may
// use (at least one; a core's hyperthreads stay together) and the load
// generator and Redis the others; ok is false with fewer than two CPUs.
func newPinning() (p *pinning, ok bool) {
	p = &pinning{}
	if err := unix.SchedGetaffinity(0, &p.all); err != nil || p.all.Count() < 2 {
		return nil, false
	}
	var cpus []int
	for cpu := 0; len(cpus) < p.all.Count(); cpu++ {
		if p.all.IsSet(cpu) {
			cpus = append(cpus, cpu)
		}
	}
	servers, rest := splitCPUs(cpus, coreOf)
	for _, cpu := range servers {
		p.servers.Set(cpu)
	}
	for _, cpu := range rest {
		p.rest.Set(cpu)
	}
	return p, true
}

// coreOf names the core cpu is a hardware thread of (its siblings' list),
// or the CPU itself where the kernel does not say.
func coreOf(cpu int) string {
	for _, f := range []string{"core_cpus_list", "thread_siblings_list"} {
		b, err := os.ReadFile(fmt.Sprintf("/sys/devices/system/cpu/cpu%d/topology/%s", cpu, f))
		if err == nil {
			return strings.TrimSpace(string(b))
		}
	}
	return strconv.Itoa(cpu)
}

// splitCPUs gives the servers the first half of the cores of cpus (at least
// one) and the rest the others, the hardware threads of a core on one side;
// with a single core it splits its threads instead.
func splitCPUs(cpus []int, core func(cpu int) string) (servers, rest []int) {
	var order []string
	threads := map[string][]int{}
	for _, cpu := range cpus {
		c := core(cpu)
		if threads[c] == nil {
			order = append(order, c)
		}
		threads[c] = append(threads[c], cpu)
	}
	if len(order) < 2 {
		return cpus[:len(cpus)/2], cpus[len(cpus)/2:]
	}
	for i, c := range order {
		if i < len(order)/2 {
			servers = append(servers, threads[c]...)
		} else {
			rest = append(rest, threads[c]...)
		}
	}
	return servers, rest
}

// cpus is how many CPUs the servers get, and how many there are in all.
func (p *pinning) cpus() (servers, all int) { return p.servers.Count(), p.all.Count() }

// apply moves every thread of the servers' processes onto the servers' CPUs
// and every thread of the others (0: this process) onto the rest. A Go
// process's GOMAXPROCS follows its affinity within about a second.
func (p *pinning) apply(servers, others []int) error {
	return errors.Join(setAffinity(servers, &p.servers), setAffinity(others, &p.rest))
}

// release lets every thread of pids run on all the CPUs again.
func (p *pinning) release(pids []int) error { return setAffinity(pids, &p.all) }

// maxPasses bounds setAffinity's passes over a process's threads.
const maxPasses = 10

// setAffinity sets the CPU affinity of every thread of each process in pids
// (0: this process). A thread started meanwhile takes its creator's mask,
// which may be the old one, so it passes over the threads again until a pass
// finds none to change.
func setAffinity(pids []int, set *unix.CPUSet) error {
	var errs []error
	for _, pid := range pids {
		dir := "/proc/self/task"
		if pid != 0 {
			dir = filepath.Join("/proc", strconv.Itoa(pid), "task")
		}
		err := fmt.Errorf("bench: threads of %s kept changing over %d passes", dir, maxPasses)
		for range maxPasses {
			changed, e := setThreads(dir, set)
			if e != nil || !changed {
				err = e
				break
			}
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// setThreads gives every thread listed in dir the mask set and reports
// whether any had another.
func setThreads(dir string, set *unix.CPUSet) (changed bool, err error) {
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		var now unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &now); err != nil {
			continue // the thread has exited
		}
		if now == *set {
			continue
		}
		changed = true
		// A thread that has just exited is no error.
		if err := unix.SchedSetaffinity(tid, set); err != nil && !errors.Is(err, unix.ESRCH) {
			return changed, err
		}
	}
	return changed, nil
}
