package bwrap

import (
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/git-lease/git-lease/sandbox"
)

// systemDirs are bound read-only when present. On merged-/usr systems the
// top-level ones are symlinks into /usr and are recreated as such.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"}

// bwrapOptions is the whole sandbox: what the agent sees and nothing else.
// self is the git-lease binary, which a lease with a network runs inside.
func bwrapOptions(self string, spec sandbox.Spec, d dirs, cmd sandbox.Command) []string {
	a := []string{
		"--unshare-user", "--uid", agentUID, "--gid", agentUID, "--disable-userns",
		"--unshare-pid", "--as-pid-1", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--unshare-cgroup-try",
		"--hostname", "lease-" + spec.ID,
		"--die-with-parent", "--new-session", "--cap-drop", "ALL",
	}
	for _, dir := range systemDirs {
		fi, err := os.Lstat(dir)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(dir); err == nil {
				a = append(a, "--symlink", target, dir)
			}
		case fi.IsDir():
			a = append(a, "--ro-bind", dir, dir)
		}
	}
	for _, ro := range spec.ReadOnly {
		a = append(a, "--ro-bind", ro, ro)
	}
	for _, b := range spec.Binds {
		if b.Writable {
			a = append(a, "--bind", b.Host, b.Sandbox)
		} else {
			a = append(a, "--ro-bind", b.Host, b.Sandbox)
		}
	}
	a = append(a, networkBinds(self, spec)...)
	tmpSize := fmt.Sprint(spec.Limits.DiskBytes)
	a = append(a, "--proc", "/proc", "--dev", "/dev")
	if spec.Limits.DiskBytes > 0 {
		a = append(a, "--size", tmpSize)
	}
	a = append(a, "--tmpfs", "/tmp")
	if spec.Limits.DiskBytes > 0 {
		a = append(a, "--size", tmpSize)
	}
	a = append(a, "--tmpfs", agentHome)
	if spec.Limits.DiskBytes > 0 {
		a = append(a, "--size", tmpSize)
	}
	// The root and /dev are bwrap's own unbounded tmpfs: read-only, so
	// that nothing but /work, /tmp, the home and /dev/shm (all bounded) can
	// be written.
	a = append(a, "--tmpfs", "/dev/shm", "--bind", d.merged, workDir,
		"--remount-ro", "/dev", "--remount-ro", "/", "--chdir", path.Join(workDir, cmd.Dir), "--clearenv")
	for _, kv := range agentEnv(spec, cmd.Env) {
		k, v, _ := strings.Cut(kv, "=")
		a = append(a, "--setenv", k, v)
	}
	return a
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
		"PATH=" + AgentPATH,
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
