package bwrap

import (
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/git-lease/git-lease/sandbox"
)

// systemDirs are bound read-only when present. On merged-/usr systems the
// top-level ones are symlinks into /usr and are recreated as such.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt"}

// stageDir is a tmpfs that the sandbox's init mounts in its private mount
// namespace (over /run, which bwrap itself does not use) and fills with
// everything but the system directories that bwrap shows the agent: the
// overlay, the lease's files, the generated /etc files. bwrap then binds
// only from there. This way bwrap never needs to reach a host path: as
// root, the sandbox's uid cannot traverse root's directories, and the host
// hands the init each of them as a mount instead (see detach).
const stageDir = "/run/git-lease"

// stage is one host file or directory the init puts at stageDir/Name: by
// binding Host, or by attaching the mount the host sent for it.
type stage struct {
	Name string
	Host string
	Dir  bool
	// mount, when set, makes the stage's mount (root only) in place of a
	// detached copy of Host's.
	mount func() (int, error)
	// Lower marks the overlay's lower layers (the exported base's), in
	// order, the topmost first. They are staged as lower0, lower1, ….
	Lower bool
	// Cache marks the cache overlay's lower layers, staged as cache0, ….
	Cache bool
}

// The names of the overlay's stages: the lease's runtime directory, which
// holds the upper and work directories (overlayfs wants both on one
// mount), and where the overlay is mounted; its lower layers come first.
const (
	stageLease   = "lease"
	stageMerged  = "merged"    // the overlay's mount point, made by the init
	stageScratch = "scratch"   // the tmpfs behind /tmp, the home and /dev/shm
	stageSelf    = "git-lease" // a copy of the binary, for the network forwarder
	stageCaches  = "caches"    // the cache overlay's mount point, made by the init
)

// scratchDirs are the agent's places on the scratch tmpfs.
var scratchDirs = []struct {
	name, dest string
	mode       os.FileMode
}{{"tmp", "/tmp", os.ModeSticky | 0o777}, {"home", agentHome, 0o755}, {"shm", "/dev/shm", os.ModeSticky | 0o777}}

// scratchOptions are the scratch tmpfs's mount options. Its files are
// memory, so its size is the smaller of the disk and memory bounds, and
// the host counts what it holds as the agent's memory (see limiter). Its
// inodes are bounded too: empty files cost kernel memory, not bytes.
func scratchOptions(l sandbox.Limits) string {
	size := l.DiskBytes
	if l.MemoryBytes > 0 && (size == 0 || l.MemoryBytes < size) {
		size = l.MemoryBytes
	}
	if size == 0 {
		return "mode=0755"
	}
	return fmt.Sprintf("mode=0755,size=%d,nr_inodes=%d", size, inodesFor(size))
}

// sandboxView is what bwrap shows the agent: its options, and the stages
// the init must prepare for them.
type sandboxView struct {
	options []string
	stages  []stage
	etc     map[string]string      // generated /etc files, by name
	files   map[string]sandboxFile // the lease's files, by name on their tmpfs
	shared  map[string]string      // writable ones: sandbox path -> name
	self    bool                   // the init copies the git-lease binary to stageSelf
}

func (v *sandboxView) add(args ...string) { v.options = append(v.options, args...) }

// stageMount has the stage name made by mount (see stage.mount).
func (v *sandboxView) stageMount(name string, mount func() (int, error)) {
	for i := range v.stages {
		if v.stages[i].Name == name {
			v.stages[i].Host, v.stages[i].mount = "", mount
		}
	}
}

// stageBind stages host (a file or directory) and binds it at dest.
func (v *sandboxView) stageBind(host, dest string, writable bool) {
	fi, err := os.Stat(host)
	name := "bind" + strconv.Itoa(len(v.stages))
	v.stages = append(v.stages, stage{Name: name, Host: host, Dir: err == nil && fi.IsDir()})
	bind := "--ro-bind"
	if writable {
		bind = "--bind"
	}
	v.add(bind, path.Join(stageDir, name), dest)
}

// newSandboxView is the whole sandbox: what the agent sees and nothing
// else.
func newSandboxView(spec sandbox.Spec, cmd sandbox.Command, served *Served) (*sandboxView, error) {
	v := &sandboxView{
		etc:    generatedEtc(spec.ID),
		files:  map[string]sandboxFile{},
		shared: map[string]string{},
	}
	if served != nil {
		v.stages = append(v.stages, stage{Name: stageMerged, Host: served.Mount, Dir: true})
	} else {
		lowers, err := lowerDirs(spec)
		if err != nil {
			return nil, err
		}
		for i, dir := range lowers {
			v.stages = append(v.stages, stage{Name: "lower" + strconv.Itoa(i), Host: dir, Dir: true, Lower: true})
		}
		for i, dir := range heldCaches(spec) {
			v.stages = append(v.stages, stage{Name: "cache" + strconv.Itoa(i), Host: dir, Dir: true, Cache: true})
		}
		v.stages = append(v.stages, stage{Name: stageLease, Host: spec.Dir, Dir: true})
	}
	v.add("--unshare-user", "--uid", agentUID, "--gid", agentUID, "--disable-userns",
		"--unshare-pid", "--as-pid-1", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--unshare-cgroup-try",
		"--hostname", "lease-"+spec.ID,
		"--die-with-parent", "--new-session", "--cap-drop", "ALL")
	for _, dir := range systemDirs {
		fi, err := os.Lstat(dir)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(dir); err == nil {
				v.add("--symlink", target, dir)
			}
		case fi.IsDir():
			v.add("--ro-bind", dir, dir)
		}
	}
	v.etcOptions()
	v.procOptions()
	v.add("--dev", "/dev")
	// /tmp, the home and /dev/shm are one tmpfs that the init mounts with
	// a size and an inode count (see scratchOptions), so that the kernel
	// bounds all three together; bwrap's own --tmpfs takes no inode count.
	for _, d := range scratchDirs {
		v.add("--bind", path.Join(stageDir, stageScratch, d.name), d.dest)
	}
	// Where the decoy docker socket appears (see decoys.go). /run holds
	// the lease's files, so /var/run is the directory and /run has a link.
	v.add("--ro-bind", path.Join(stageDir, stageScratch, decoyRun), "/var/run",
		"--symlink", path.Join("/var/run", dockerSocket), path.Join("/run", dockerSocket))
	// Shared paths come after the tmpfs mounts, which would hide them.
	for _, ro := range spec.ReadOnly {
		v.stageBind(ro, ro, false)
	}
	for i, b := range spec.Binds {
		name := "file" + strconv.Itoa(i)
		f := sandboxFile{Writable: b.Writable}
		if b.Writable {
			v.shared[b.Sandbox] = name
			v.add("--bind", path.Join(stageDir, stageFiles, name), b.Sandbox)
		} else {
			content, err := readBind(b.Host)
			if err != nil {
				return nil, err
			}
			f.Content = content
			v.add("--ro-bind", path.Join(stageDir, stageFiles, name), b.Sandbox)
		}
		v.files[name] = f
	}
	if spec.Proxy != nil {
		// A copy of the binary (see copySelf) and a socket the init made
		// on its scratch tmpfs (see listenSocket), not binds of host paths,
		// which the sandbox's mount table would show.
		v.self = true
		v.add("--ro-bind", path.Join(stageDir, stageSelf), selfInSandbox)
		v.add("--bind", path.Join(stageDir, stageScratch, proxySocket), socketInSandbox) // connecting needs a writable bind
	}
	// The root and /dev are bwrap's own unbounded tmpfs: read-only, so
	// that nothing but /work and the scratch tmpfs (both bounded) can be
	// written.
	if spec.CachesDir != "" {
		v.add("--bind", path.Join(stageDir, stageCaches), CacheRoot)
	}
	bindWork := "--bind"
	if spec.ReadOnlyWork {
		bindWork = "--ro-bind"
	}
	v.add(bindWork, path.Join(stageDir, stageMerged), workDir,
		"--remount-ro", "/dev", "--remount-ro", "/", "--chdir", path.Join(workDir, cmd.Dir), "--clearenv")
	for _, kv := range agentEnv(spec, cmd.Env) {
		k, val, _ := strings.Cut(kv, "=")
		v.add("--setenv", k, val)
	}
	return v, nil
}

// procOptions mount the sandbox's own /proc, with the host-global knobs
// read-only whatever the agent's uid (the kernel checks the uid, not a
// capability, on /proc/sys, and bwrap covers it only when the directory
// itself is writable, which it never is) and the files that show kernel
// memory, keys or timing of the whole host hidden, as Docker's default
// does.
func (v *sandboxView) procOptions() {
	v.add("--proc", "/proc")
	for _, knob := range []string{"sys", "sysrq-trigger", "irq", "bus", "fs"} {
		if _, err := os.Stat("/proc/" + knob); err == nil {
			v.add("--ro-bind", "/proc/"+knob, "/proc/"+knob)
		}
	}
	for _, hidden := range []string{"kcore", "keys", "key-users", "timer_list", "sched_debug", "latency_stats", "kallsyms", "kpagecount", "kpageflags", "kpagecgroup"} {
		if fi, err := os.Stat("/proc/" + hidden); err == nil && fi.Mode().IsRegular() {
			v.add("--ro-bind", "/dev/null", "/proc/"+hidden)
		}
	}
}

// gatedCommand runs the agent's argv behind the gate, which first starts
// the network forwarder when the lease has a network.
func gatedCommand(argv []string, network bool) []string {
	script := gateScript
	if network {
		script = forwarderScript + gateScript
	}
	return append([]string{"/bin/sh", "-c", script, "lease-gate"}, argv...)
}

// AgentPATH is the agent's PATH: the system's directories, read-only.
const AgentPATH = "/usr/local/bin:/usr/bin:/bin"

// hostEnvAllowed are the only host variables an agent sees: terminal and
// locale settings, which carry no secrets.
var hostEnvAllowed = []string{"TERM", "LANG", "LC_ALL", "LC_CTYPE", "TZ"}

// agentEnv is the agent's whole environment: a fixed base, a few harmless
// host settings, and what the lease adds (its ID, and the credentials that
// policy names for it).
func agentEnv(spec sandbox.Spec, extra []string) []string {
	env := []string{
		"PATH=" + strings.Join(append([]string{AgentPATH}, spec.PATH...), ":"),
		"HOME=" + agentHome, "USER=agent", "LOGNAME=agent", "SHELL=/bin/sh",
		"TMPDIR=/tmp", "LEASE_ID=" + spec.ID, "LEASE_WORKDIR=" + workDir,
	}
	for _, k := range hostEnvAllowed {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return append(env, extra...)
}
