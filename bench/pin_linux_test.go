package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// MustAllowed returns the CPUs every thread of pid may run on, as
// /proc/<pid>/task/*/status lists them, one entry per distinct list.
func MustAllowed(t *testing.T, pid int) []string {
	t.Helper()
	tasks, err := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "status"))
	if err != nil || len(tasks) == 0 {
		t.Fatalf("no threads of %d: %v", pid, err)
	}
	seen := map[string]bool{}
	var lists []string
	for _, path := range tasks {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // the thread has exited
		}
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
				if v = strings.TrimSpace(v); !seen[v] {
					seen[v] = true
					lists = append(lists, v)
				}
			}
		}
	}
	return lists
}

// cpuList writes set as the kernel lists CPUs: runs of consecutive CPUs,
// comma-separated ("0", "0-3,6").
func cpuList(set unix.CPUSet) string {
	var runs []string
	for cpu, n := 0, 0; n < set.Count(); cpu++ {
		if !set.IsSet(cpu) {
			continue
		}
		last := cpu
		for set.IsSet(last + 1) {
			last++
		}
		run := strconv.Itoa(cpu)
		if last > cpu {
			run += "-" + strconv.Itoa(last)
		}
		runs = append(runs, run)
		n += last - cpu + 1
		cpu = last
	}
	return strings.Join(runs, ",")
}

// TestPinningMovesEveryThread pins a multi-threaded Go child (the HTTP
// floor) to the servers' CPUs and this process to the rest, checks every
// thread of each, and that release lets all of them run anywhere again.
func TestPinningMovesEveryThread(t *testing.T) {
	p, ok := newPinning()
	if runtime.NumCPU() < 2 {
		if ok {
			t.Fatal("newPinning split a single CPU")
		}
		return // nothing to split: the bench measures on the shared CPU
	}
	if !ok {
		t.Fatalf("newPinning refused %d CPUs", runtime.NumCPU())
	}
	if p.servers.Count() < 1 || p.rest.Count() < 1 || p.servers.Count()+p.rest.Count() != p.all.Count() {
		t.Fatalf("split %d CPUs into %d for servers and %d for the rest", p.all.Count(), p.servers.Count(), p.rest.Count())
	}
	child := exec.Command(MustBuild(t, t.TempDir(), "rushline-bench", "./cmd/rushline-bench"), "naive", "--floor", "--addr", "127.0.0.1:0")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	pid := child.Process.Pid
	all := cpuList(p.all)
	if got := MustAllowed(t, os.Getpid()); len(got) != 1 || got[0] != all {
		t.Fatalf("this process runs on %v before pinning, want %s", got, all)
	}

	released := false
	t.Cleanup(func() {
		if !released {
			_ = p.release([]int{pid, 0})
		}
	})
	if err := p.apply([]int{pid}, []int{0}); err != nil {
		t.Fatal(err)
	}
	if got, want := MustAllowed(t, pid), cpuList(p.servers); len(got) != 1 || got[0] != want {
		t.Errorf("the server's threads run on %v, want all on %s", got, want)
	}
	if got, want := MustAllowed(t, os.Getpid()), cpuList(p.rest); len(got) != 1 || got[0] != want {
		t.Errorf("this process's threads run on %v, want all on %s", got, want)
	}

	released = true
	if err := p.release([]int{pid, 0}); err != nil {
		t.Fatal(err)
	}
	for _, who := range []int{pid, os.Getpid()} {
		if got := MustAllowed(t, who); len(got) != 1 || got[0] != all {
			t.Errorf("process %d runs on %v after release, want %s", who, got, all)
		}
	}
}

// TestSplitCPUs: the servers get the first half of the cores, a core's
// hardware threads stay on one side, and a lone core's threads are split.
func TestSplitCPUs(t *testing.T) {
	// smt pairs CPU n with n+4, as Linux numbers hyperthreads on 4 cores.
	smt := func(cpu int) string { return strconv.Itoa(cpu % 4) }
	own := strconv.Itoa
	oneCore := func(int) string { return "0-1" }
	for _, tc := range []struct {
		name          string
		cpus          []int
		core          func(int) string
		servers, rest []int
	}{
		{"two CPUs", []int{0, 1}, own, []int{0}, []int{1}},
		{"gaps in the numbering", []int{0, 2, 5, 7}, own, []int{0, 2}, []int{5, 7}},
		{"an odd count", []int{1, 3, 4}, own, []int{1}, []int{3, 4}},
		{"hyperthreads stay with their core", []int{0, 1, 2, 3, 4, 5, 6, 7}, smt, []int{0, 4, 1, 5}, []int{2, 6, 3, 7}},
		{"one core's two threads", []int{0, 1}, oneCore, []int{0}, []int{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			servers, rest := splitCPUs(tc.cpus, tc.core)
			if !slices.Equal(servers, tc.servers) || !slices.Equal(rest, tc.rest) {
				t.Errorf("splitCPUs(%v) = %v, %v; want %v, %v", tc.cpus, servers, rest, tc.servers, tc.rest)
			}
		})
	}
}
