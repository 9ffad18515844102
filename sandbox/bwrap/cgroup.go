package bwrap

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/git-lease/git-lease/sandbox"
)

// cgroup is a per-lease cgroup for memory and process bounds: cgroup v2
// when this process's v2 cgroup delegates the memory and pids controllers
// to children, else the v1 memory and pids hierarchies when they are
// writable (typically as root). Without either, bounds fall back to rlimits.
type cgroup struct {
	kind string   // "cgroup v2" or "cgroup v1"
	dirs []string // one per hierarchy (v2: one)
	// usage is the file that counts the CPU time of every process that
	// was ever in the cgroup ("" when there is none): the lease's total,
	// which no per-process rlimit gives.
	usage string
}

// newCgroup creates the lease's cgroup with its limits, or returns nil when
// no writable cgroup with both controllers exists.
func newCgroup(id string, limits sandbox.Limits) *cgroup {
	if limits.MemoryBytes == 0 && limits.Processes == 0 && limits.CPU == 0 {
		return nil
	}
	name := "git-lease-" + id
	if dir := v2Dir(); dir != "" {
		cg := &cgroup{kind: "cgroup v2", dirs: []string{filepath.Join(dir, name)}, usage: filepath.Join(dir, name, "cpu.stat")}
		if cg.create(map[string]string{"memory.max": num(limits.MemoryBytes), "memory.swap.max": "0", "pids.max": num(int64(limits.Processes) + 3)}) {
			return cg
		}
	}
	mem, pids := v1Dir("memory"), v1Dir("pids")
	if mem != "" && pids != "" {
		cg := &cgroup{kind: "cgroup v1", dirs: []string{filepath.Join(mem, name), filepath.Join(pids, name)}}
		if cpu := v1Dir("cpuacct"); cpu != "" && limits.CPU > 0 {
			cg.dirs = append(cg.dirs, filepath.Join(cpu, name))
			cg.usage = filepath.Join(cpu, name, "cpuacct.usage")
		}
		if cg.create(map[string]string{"memory.limit_in_bytes": num(limits.MemoryBytes), "pids.max": num(int64(limits.Processes) + 3)}) {
			return cg
		}
	}
	return nil
}

func num(v int64) string {
	if v <= 0 {
		return "max"
	}
	return strconv.FormatInt(v, 10)
}

// create makes the directories and writes the limits each one has a file
// for. Any failure removes what was made.
func (c *cgroup) create(limits map[string]string) bool {
	for _, dir := range c.dirs {
		if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
			c.remove()
			return false
		}
		for file, v := range limits {
			path := filepath.Join(dir, file)
			if _, err := os.Stat(path); err != nil {
				continue
			}
			if v == "max" && c.kind == "cgroup v1" {
				v = "-1"
			}
			if err := os.WriteFile(path, []byte(v), 0o644); err != nil {
				c.remove()
				return false
			}
		}
	}
	return true
}

// add moves a process (and its future children) into the cgroup.
func (c *cgroup) add(pid int) error {
	for _, dir := range c.dirs {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			return fmt.Errorf("%w: join %s: %v", sandbox.ErrUnavailable, dir, err)
		}
	}
	return nil
}

// cpuTime is the CPU time the lease's processes have used, dead ones
// included, and false when the cgroup does not count it.
func (c *cgroup) cpuTime() (time.Duration, bool) {
	if c.usage == "" {
		return 0, false
	}
	if strings.HasSuffix(c.usage, "cpu.stat") {
		usec := counter(c.usage, "usage_usec")
		return time.Duration(usec) * time.Microsecond, true
	}
	b, err := os.ReadFile(c.usage)
	if err != nil {
		return 0, false
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return time.Duration(ns), err == nil
}

// bound names the bound the kernel enforced, from the cgroup's counters.
func (c *cgroup) bound() string {
	for _, dir := range c.dirs {
		if counter(filepath.Join(dir, "memory.events"), "oom_kill") > 0 ||
			counter(filepath.Join(dir, "memory.oom_control"), "oom_kill") > 0 {
			return sandbox.BoundMemory
		}
		if counter(filepath.Join(dir, "pids.events"), "max") > 0 {
			return sandbox.BoundProcesses
		}
	}
	return ""
}

// remove deletes the cgroup once its processes are gone (they die with the
// sandbox's pid namespace; their exit can take a moment to be reaped).
func (c *cgroup) remove() {
	for _, dir := range c.dirs {
		for i := 0; i < 50; i++ {
			if err := os.Remove(dir); err == nil || os.IsNotExist(err) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func counter(path, key string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		if k == key {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// v2Dir is this process's cgroup v2 directory when it can hold children
// with the memory and pids controllers, else "".
func v2Dir() string {
	mount := mountPoint(func(fstype, opts string) bool { return fstype == "cgroup2" })
	if mount == "" {
		return ""
	}
	rel := ownCgroup(func(controllers string) bool { return controllers == "" })
	dir := filepath.Join(mount, rel)
	ctl, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return ""
	}
	fields := " " + strings.TrimSpace(string(ctl)) + " "
	if !strings.Contains(fields, " memory ") || !strings.Contains(fields, " pids ") || unixAccess(dir) != nil {
		return ""
	}
	return dir
}

// v1Dir is this process's directory in the v1 hierarchy of controller when
// it is writable, else "".
func v1Dir(controller string) string {
	mount := mountPoint(func(fstype, opts string) bool {
		return fstype == "cgroup" && strings.Contains(","+opts+",", ","+controller+",")
	})
	if mount == "" {
		return ""
	}
	rel := ownCgroup(func(controllers string) bool {
		return strings.Contains(","+controllers+",", ","+controller+",")
	})
	dir := filepath.Join(mount, rel)
	if unixAccess(dir) != nil {
		return ""
	}
	return dir
}

// ownCgroup reads this process's cgroup path from /proc/self/cgroup, in the
// hierarchy whose controller list matches.
func ownCgroup(match func(controllers string) bool) string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "/"
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && match(parts[1]) {
			return parts[2]
		}
	}
	return "/"
}

// mountPoint finds a mount in /proc/self/mountinfo by its type and super options.
func mountPoint(match func(fstype, opts string) bool) string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if len(pf) >= 5 && len(qf) >= 3 && match(qf[0], qf[2]) {
			return pf[4]
		}
	}
	return ""
}

// unixAccess reports whether this process may create entries in dir.
func unixAccess(dir string) error {
	return unix.Access(dir, unix.W_OK)
}
