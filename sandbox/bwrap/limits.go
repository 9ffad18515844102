package bwrap

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/git-lease/git-lease/sandbox"
)

// limiter enforces a lease's bounds. The kernel enforces them (a cgroup
// when one is writable, else rlimits, which bind per sandbox because the
// sandbox has its own user namespace; the disk image's file system for the
// disk, else nothing but the host's walk); the host watches the sandbox's
// processes and its disk so that a lease that reaches a bound is stopped
// and the bound is named.
type limiter struct {
	limits sandbox.Limits
	uppers []string // the upper directories of the lease's overlays
	disk   int      // the disk image's mount (-1: none; the host walks uppers)
	cg     *cgroup  // nil: rlimits only
	// threads is headroom under RLIMIT_NPROC for the sandbox's own
	// processes: bwrap, the gate, and the network forwarder if any.
	threads int64

	mu       sync.Mutex
	pidns    string // the sandbox's pid namespace, as /proc/<pid>/ns/pid reads
	scratch  int    // the scratch tmpfs, opened through the sandbox's mounts (-1: none)
	openDisk int64  // what files unlinked but held open occupied at the last look
	peakRSS  int64
	diskBusy bool
}

func newLimiter(spec sandbox.Spec, d dirs) *limiter {
	threads := int64(3) // bwrap, its reaper and the gate shell
	if spec.Proxy != nil {
		threads += forwarderThreads
	}
	return &limiter{limits: spec.Limits, uppers: []string{d.upper, d.cache}, disk: d.disk, cg: newCgroup(spec.ID, spec.Limits), threads: threads, scratch: -1}
}

// enforcement names the kernel mechanism, for the lease record.
func (l *limiter) enforcement() string {
	scratch := "; tmpfs size and inodes (/tmp, home, /dev/shm)"
	switch {
	case l.limits.DiskBytes == 0:
	case l.disk >= 0:
		scratch += "; an ext4 image of its own (/work: disk bytes and inodes)"
	default:
		why := kernelDiskMissing()
		if why == "" {
			why = "the lease has no disk image"
		}
		scratch += "; no kernel bound for /work's disk, the host's watch (" + why + ")"
	}
	switch {
	case l.cg == nil:
		return "rlimits (memory, processes, cpu, file size)" + scratch
	case l.cg.usage != "":
		return l.cg.kind + " (memory, processes, cpu total) + rlimits (cpu, file size)" + scratch
	}
	return l.cg.kind + " (memory, processes) + rlimits (cpu, file size)" + scratch
}

// rlimits are set by the sandbox init, after its user namespace exists, so
// that RLIMIT_NPROC counts the sandbox's processes only.
func (l *limiter) rlimits() []rlimit {
	out := []rlimit{{unix.RLIMIT_CORE, 0, 0}}
	add := func(res int, v int64) {
		if v > 0 {
			out = append(out, rlimit{res, uint64(v), uint64(v)})
		}
	}
	if cpu := int64(l.limits.CPU.Seconds()); cpu > 0 {
		// SIGXCPU at the limit, SIGKILL a second later for an agent that
		// ignores it.
		out = append(out, rlimit{unix.RLIMIT_CPU, uint64(cpu), uint64(cpu + 1)})
	}
	// A file's size, holes included, even on the disk image, which
	// bounds only what is allocated: the host reads a result's files whole.
	add(unix.RLIMIT_FSIZE, l.limits.DiskBytes)
	if l.limits.Processes > 0 {
		add(unix.RLIMIT_NPROC, int64(l.limits.Processes)+l.threads)
	}
	add(unix.RLIMIT_DATA, l.limits.MemoryBytes)
	return out
}

// attach puts the sandbox's first process into the cgroup, before it has
// run anything.
func (l *limiter) attach(pid int) error {
	if l.cg == nil {
		return nil
	}
	return l.cg.add(pid)
}

// sandboxPID is the sandbox's first process (its PID 1, the gate): the
// child of bwrap, which is pid. It is 0 when it cannot be found.
func sandboxPID(pid int) int {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "task", strconv.Itoa(pid), "children"))
	if err != nil {
		return 0
	}
	for _, child := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(child); err == nil {
			return n
		}
	}
	return 0
}

// openScratch opens the scratch tmpfs through the mount namespace of pid
// (bwrap, which stays in the init's), so that each tick can ask the kernel
// what the agent keeps there.
func (l *limiter) openScratch(pid int) {
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/root"+filepath.Join(stageDir, stageScratch), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err == nil {
		l.mu.Lock()
		l.scratch = fd
		l.mu.Unlock()
	}
}

// scratchBytes is what the scratch tmpfs holds (0 when it is not open).
func (l *limiter) scratchBytes() int64 {
	l.mu.Lock()
	fd := l.scratch
	l.mu.Unlock()
	var st unix.Statfs_t
	if fd < 0 || unix.Fstatfs(fd, &st) != nil {
		return 0
	}
	return int64(st.Blocks-st.Bfree) * st.Bsize
}

// started learns the sandbox's pid namespace from its first process.
func (l *limiter) started(first int) {
	if ns, err := os.Readlink("/proc/" + strconv.Itoa(first) + "/ns/pid"); err == nil && first > 0 {
		l.mu.Lock()
		l.pidns = ns
		l.mu.Unlock()
	}
}

// interrupt sends SIGINT to every process of the sandbox but its PID 1
// (the gate shell, which only waits for the agent), as Ctrl-C would.
func (l *limiter) interrupt() error {
	pids, err := l.processes()
	if err != nil {
		return err
	}
	for _, pid := range pids {
		if nsPID(pid) != 1 {
			syscall.Kill(pid, syscall.SIGINT)
		}
	}
	return nil
}

// processes are the host PIDs of the sandbox's processes: those in its pid
// namespace.
func (l *limiter) processes() ([]int, error) {
	l.mu.Lock()
	ns := l.pidns
	l.mu.Unlock()
	if ns == "" {
		return nil, errors.New("the sandbox has not started")
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if link, err := os.Readlink("/proc/" + e.Name() + "/ns/pid"); err == nil && link == ns {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// nsPID is a process's PID inside its own pid namespace (NSpid's last field).
func nsPID(pid int) int {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			f := strings.Fields(rest)
			n, _ := strconv.Atoi(f[len(f)-1])
			return n
		}
	}
	return 0
}

// watch returns the bound the sandbox has reached, if any.
func (l *limiter) watch() string {
	if b := l.watchProcesses(); b != "" {
		return b
	}
	if l.cg != nil && l.limits.CPU > 0 {
		if used, ok := l.cg.cpuTime(); ok && used >= l.limits.CPU {
			return sandbox.BoundCPU
		}
	}
	if l.limits.DiskBytes > 0 && l.disk >= 0 {
		if diskFull(l.disk) {
			return sandbox.BoundDisk
		}
	} else if l.limits.DiskBytes > 0 {
		l.mu.Lock()
		busy := l.diskBusy
		l.diskBusy = true
		l.mu.Unlock()
		if !busy {
			used := l.diskUsage()
			l.mu.Lock()
			l.diskBusy = false
			open := l.openDisk
			l.mu.Unlock()
			if used == unmeasurable || used+open > l.limits.DiskBytes {
				return sandbox.BoundDisk
			}
		}
	}
	return ""
}

// watchProcesses counts the processes of the sandbox's pid namespace and
// their resident memory.
func (l *limiter) watchProcesses() string {
	pids, err := l.processes()
	if err != nil {
		return ""
	}
	n := len(pids)
	var rss, openDisk int64
	page := int64(os.Getpagesize())
	l.mu.Lock()
	scratchDev := devOf(l.scratch)
	l.mu.Unlock()
	seen := map[[2]uint64]bool{}
	for _, pid := range pids {
		disk, memory := unlinkedOpen(strconv.Itoa(pid), scratchDev, seen)
		openDisk += disk
		rss += memory
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm"); err == nil {
			if f := strings.Fields(string(b)); len(f) > 1 {
				pages, _ := strconv.ParseInt(f[1], 10, 64)
				rss += pages * page
			}
		}
	}
	// tmpfs pages are memory that no process's RSS shows.
	rss += l.scratchBytes()
	l.mu.Lock()
	l.openDisk = openDisk
	l.peakRSS = max(l.peakRSS, rss)
	l.mu.Unlock()
	switch {
	case l.limits.Processes > 0 && n >= l.limits.Processes:
		return sandbox.BoundProcesses
	case l.limits.MemoryBytes > 0 && rss > l.limits.MemoryBytes:
		return sandbox.BoundMemory
	}
	return ""
}

// finish names the bound behind a failure that the kernel enforced by
// refusing or signalling (an allocation, a fork, CPU time, file size) rather
// than by a kill the host decided, and removes the cgroup. Signals reach the
// host as bwrap's exit code 128+n.
func (l *limiter) finish(exit *sandbox.Exit, state *os.ProcessState) {
	l.mu.Lock()
	if l.scratch >= 0 {
		unix.Close(l.scratch)
		l.scratch = -1
	}
	l.mu.Unlock()
	if l.cg != nil {
		if exit.Bound == "" {
			exit.Bound = l.cg.bound()
		}
		l.cg.remove()
	}
	l.mu.Lock()
	peak := l.peakRSS
	l.mu.Unlock()
	var cpu time.Duration
	if state != nil {
		if ru, ok := state.SysUsage().(*syscall.Rusage); ok {
			peak = max(peak, ru.Maxrss*1024) // the largest process of the whole tree, in KiB
		}
		cpu = state.UserTime() + state.SystemTime()
	}
	switch {
	case exit.Bound != "":
	case exit.Signal == "SIGXCPU" || exit.Code == 128+int(syscall.SIGXCPU),
		exit.Code != 0 && l.limits.CPU > 0 && cpu >= l.limits.CPU:
		exit.Bound = sandbox.BoundCPU
	case exit.Signal == "SIGXFSZ" || exit.Code == 128+int(syscall.SIGXFSZ):
		exit.Bound = sandbox.BoundDisk
	case exit.Code != 0 && l.limits.MemoryBytes > 0 && peak*2 >= l.limits.MemoryBytes:
		// Under rlimits an allocation past the bound fails instead of
		// being killed; allocators grow by doubling, so a failed agent
		// that got past half its bound ran into it.
		exit.Bound = sandbox.BoundMemory
		exit.Detail = fmt.Sprintf("peak resident memory %d MiB of %d MiB", peak>>20, l.limits.MemoryBytes>>20)
	case l.limits.DiskBytes > 0 && l.disk >= 0:
		if diskFull(l.disk) {
			exit.Bound = sandbox.BoundDisk
		}
	case l.limits.DiskBytes > 0 && l.diskUsage() > l.limits.DiskBytes: // unmeasurable included
		exit.Bound = sandbox.BoundDisk
	}
}

// diskUsage is what the lease's upper directories hold together (its
// caches' counts against its disk bound too), or unmeasurable.
func (l *limiter) diskUsage() int64 {
	var total int64
	for _, dir := range l.uppers {
		used := diskUsage(dir)
		if used == unmeasurable {
			return unmeasurable
		}
		total += used
	}
	return total
}
