// Package bwrap is the embedded default sandbox on Linux: an overlayfs over
// a shared, read-only export of the base tree, mounted in a private user and
// mount namespace, with bubblewrap running the agent in its own user, pid,
// ipc, uts and network namespaces, with a cleared environment and nothing of
// the host but read-only system directories.
package bwrap

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/git-lease/git-lease/sandbox"
)

// Provider runs agents under bubblewrap. Self is the git-lease binary,
// re-executed as the sandbox's init.
type Provider struct {
	Self string
	// Served, when set, is a /work that another provider serves from the
	// host (agentfs's FUSE mount), shown to the agent in place of bwrap's
	// overlay: bwrap then exports no base and makes no overlay directories.
	Served *Served
}

// Served is a host directory served as the agent's /work. Usage is the
// directory whose size is the disk the agent used (what the disk bound
// measures).
type Served struct {
	Mount, Usage string
}

// dirs are the lease's overlay directories, or for a served /work the
// directory that measures its disk.
func (p Provider) dirs(spec sandbox.Spec) (dirs, error) {
	if p.Served != nil {
		return dirs{upper: p.Served.Usage, disk: -1}, nil
	}
	return leaseDirs(spec)
}

// Name is "bwrap".
func (Provider) Name() sandbox.ProviderName { return sandbox.Bwrap }

// Sandboxed is true.
func (Provider) Sandboxed() bool { return true }

// The agent's view of its sandbox.
const (
	agentUID  = "1000"
	agentHome = "/home/agent"
	workDir   = "/work"
)

// dirs are the lease's overlay directories (upper: its /work's, cache:
// its caches'), and the descriptor of the disk image's mount that holds
// them (-1: none, they are under spec.Dir).
type dirs struct {
	upper, work, cache string
	disk               int
}

// layout is where the overlay directories are without a disk image.
func layout(spec sandbox.Spec) dirs {
	return dirs{upper: filepath.Join(spec.Dir, "upper"), work: filepath.Join(spec.Dir, "work"), cache: filepath.Join(spec.Dir, cacheUpper), disk: -1}
}

// Check reports whether bwrap is installed and user namespaces are enabled.
// (Whether overlayfs mounts in a user namespace shows only at Launch.)
func (Provider) Check() error {
	if _, err := exec.LookPath("bwrap"); err != nil {
		return fmt.Errorf("%w: bubblewrap is not installed (install it with: sudo apt-get install bubblewrap), or use --mode trusted_local knowingly", sandbox.ErrUnavailable)
	}
	return checkUserNamespaces("/proc", os.Getuid())
}

// Create exports the base (once per tree) and makes the lease's overlay
// directories, owned by the sandbox's uid: on a disk image of their own
// when the kernel can bound the disk here (see image.go). It is
// idempotent.
func (p Provider) Create(ctx context.Context, spec sandbox.Spec) error {
	if err := p.Check(); err != nil {
		return err
	}
	if p.Served != nil {
		if err := os.MkdirAll(spec.Dir, 0o700); err != nil {
			return err
		}
		_, _, err := sandboxIDs(spec)
		return err
	}
	if err := acquireBase(spec); err != nil {
		return err
	}
	if err := acquireCaches(spec); err != nil {
		return err
	}
	d := layout(spec)
	if err := os.MkdirAll(spec.Dir, 0o700); err != nil {
		return err
	}
	uid, gid, err := sandboxIDs(spec)
	if err != nil {
		return err
	}
	if spec.Limits.DiskBytes > 0 && kernelDiskMissing() == "" {
		return makeImage(spec)
	}
	for _, dir := range []string{d.upper, d.work} {
		// The upper directory's mode becomes the mode of the agent's /work.
		if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
			return err
		}
	}
	if os.Getuid() != 0 {
		return nil
	}
	for _, dir := range []string{spec.Dir, d.upper, d.work} {
		if err := os.Lchown(dir, uid, gid); err != nil {
			return err
		}
	}
	return nil
}

// checkUserNamespaces explains the usual reasons a user namespace is
// refused, from the files under proc (/proc), for the user uid.
func checkUserNamespaces(proc string, uid int) error {
	is := func(name, value string) bool {
		b, err := os.ReadFile(filepath.Join(proc, name))
		return err == nil && strings.TrimSpace(string(b)) == value
	}
	switch {
	case uid != 0 && is("sys/kernel/unprivileged_userns_clone", "0"):
		return fmt.Errorf("%w: unprivileged user namespaces are disabled (enable them with: sudo sysctl kernel.unprivileged_userns_clone=1)", sandbox.ErrUnavailable)
	case is("sys/user/max_user_namespaces", "0"):
		return fmt.Errorf("%w: user namespaces are disabled (enable them with: sudo sysctl user.max_user_namespaces=15000)", sandbox.ErrUnavailable)
	case uid != 0 && is("sys/kernel/apparmor_restrict_unprivileged_userns", "1") && is("self/attr/apparmor/current", "unconfined"):
		// Ubuntu 23.10 and later: the user namespace of a program that no
		// AppArmor profile allows one has no capabilities, so the overlay
		// cannot be mounted. A profile for git-lease shows in its label.
		return fmt.Errorf("%w: AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1), and the sandbox needs one: give git-lease an AppArmor profile that allows userns (see the README), or lift the restriction with: sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0", sandbox.ErrUnavailable)
	}
	return nil
}

// Delta is the overlay's upper directory: in this process's own mount of
// the lease's disk image when it has one.
func (Provider) Delta(spec sandbox.Spec) (sandbox.Delta, error) {
	d, err := leaseDirs(spec)
	return sandbox.Delta{Root: d.upper, Layout: sandbox.Overlay}, err
}

// Discard removes the lease's overlay directories and releases its base.
// The overlay mount lives only in the sandbox's mount namespace, so it is
// gone with the sandbox's last process. Discarding twice is harmless.
func (p Provider) Discard(ctx context.Context, spec sandbox.Spec) error {
	unmountImage(spec)
	if err := releaseUID(spec); err != nil {
		return err
	}
	if err := removeAll(spec.Dir); err != nil || p.Served != nil {
		return err
	}
	if err := releaseCaches(spec); err != nil {
		return err
	}
	return releaseBase(spec)
}

// gateScript is the sandbox's PID 1 (bwrap --as-pid-1). It tells the host
// on fd 4 that the sandbox is fully set up, holds the agent until the host
// writes to fd 5 (after it has recorded every identity of the lease), and
// closes both before the agent runs. It then runs the agent in the
// foreground and waits for it (reaping orphans on the way), so that the
// agent's resource usage (peak memory, CPU time) reaches the host with its
// exit status, and the agent starts with default signal handling: an
// asynchronous command would start with SIGINT ignored, and could not be
// interrupted gracefully. "exit $?" keeps the shell from exec'ing the agent
// as PID 1, which ignores signals it has no handler for. (fd 3 carried the
// init its spec.)
const gateScript = `printf r >&4 && exec 4>&- && read -r _ <&5 && exec 5<&- || exit 125; "$@"; exit $?`

// Launch starts the sandbox around cmd and returns once it is fully set up
// with the agent held at its gate, or fails with sandbox.ErrUnavailable and
// what the sandbox printed.
func (p Provider) Launch(ctx context.Context, spec sandbox.Spec, cmd sandbox.Command) (sandbox.Process, error) {
	bwrapPath, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, fmt.Errorf("%w: bubblewrap is not installed (install it with: sudo apt-get install bubblewrap)", sandbox.ErrUnavailable)
	}
	d, err := p.dirs(spec)
	if err != nil {
		return nil, err
	}
	uid, gid, err := sandboxIDs(spec)
	if err != nil {
		return nil, err
	}
	asRoot := os.Getuid() == 0
	lim := newLimiter(spec, d)
	if spec.Limits.RequireCgroup && lim.cg == nil {
		return nil, fmt.Errorf("%w: policy sets limits.require_cgroup, and no cgroup with the memory and pids controllers is writable here (as root, the v1 or v2 hierarchy; as yourself, a delegated cgroup v2 subtree, e.g. run git-lease under systemd-run --user --scope -p Delegate=yes)", sandbox.ErrUnavailable)
	}
	cmd.Env = append(networkEnv(spec), cmd.Env...)
	view, err := newSandboxView(spec, cmd, p.Served)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", sandbox.ErrUnavailable, err)
	}
	if d.disk >= 0 {
		if err := ownImage(d.disk, uid, gid); err != nil {
			return nil, err
		}
		// The sandbox gets a mount of the image of its own, not a clone
		// of this process's (a detached mount can be cloned only from
		// Linux 6.15).
		view.stageMount(stageLease, func() (int, error) { return mountImage(imagePath(spec)) })
	}
	shared := &sharedFiles{names: view.shared, dir: -1}
	filter, err := seccompFilter(spec.SeccompAllow, false, false)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", sandbox.ErrUnavailable, err)
	}
	notify, _ := seccompFilter(spec.SeccompAllow, true, spec.RecordOpens) // the same program but for its answers
	// Writes outside that begin with an open: sent by the filter where
	// trusted policy pays for it, else traced where the host may (see
	// opentrace.go), else unrecorded, saying why (traceErr).
	var traceIDs map[uint16]tracedOpen
	var traceErr error
	if !spec.RecordOpens {
		traceIDs, traceErr = traceAvailable()
	}
	init := initSpec{
		Stages: view.stages, Mounts: asRoot, Served: p.Served != nil, Etc: view.etc, Files: view.files, Self: view.self, Scratch: scratchOptions(spec.Limits), Bwrap: bwrapPath, Caches: spec.CachesDir != "", Proxy: spec.Proxy != nil,
		Seccomp: filter, Notify: notify,
		Options: view.options, Command: gatedCommand(cmd.Argv, spec.Proxy != nil), Rlimits: lim.rlimits(),
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	goR, goW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	mountsHost, mountsInit, err := socketPair()
	if err != nil {
		return nil, err
	}
	defer mountsHost.Close()
	// The init is exec'd through a descriptor: as root, the sandbox's uid
	// may not reach the binary's directory (a go build cache, root's home).
	self, err := os.Open(p.Self)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", sandbox.ErrUnavailable, err)
	}
	defer self.Close()
	c := exec.Command(fmt.Sprintf("/proc/self/fd/%d", fdSelf), InitArg)
	c.Env = []string{}
	c.Dir = "/"
	c.ExtraFiles = []*os.File{specR, readyW, goR, mountsInit, self} // fdSpec, fdReady, fdGo, fdMounts, fdSelf
	c.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}},
		Setsid:      true,
		// The sandbox dies with the thread that forked it: no goroutine
		// may end locked to a thread (see recorder.serve).
		Pdeathsig: syscall.SIGKILL,
	}
	if asRoot {
		// Root's supplementary groups (kept across the uid change) would
		// open group-readable host files: the sandbox has none. Only a
		// mapping that root writes may allow setgroups.
		c.SysProcAttr.GidMappingsEnableSetgroups = true
		c.SysProcAttr.Credential = &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}}
	}
	proc, err := sandbox.NewProc(ctx, c, spec.Limits, cmd, lim.enforcement())
	if err != nil {
		return nil, err
	}
	if asRoot {
		if err := proc.GiveStdio(uid, gid); err != nil {
			return nil, err
		}
	}
	proc.Watch = lim.watch
	proc.Interrupter = lim.interrupt
	proc.Finish = func(exit *sandbox.Exit, state *os.ProcessState) {
		shared.finish()
		lim.finish(exit, state)
		// The kernel makes the overlay's work/work with mode 000, and an
		// agent may leave directories its owner cannot open. The host
		// must read the upper directory to collect it, a lease in review
		// keeps its sandbox directory until cleanup, and a user's rm -rf
		// of the repository meanwhile must not fail on either. Directory
		// modes are no part of a result.
		if d.work != "" {
			os.Chmod(filepath.Join(d.work, "work"), 0o700)
		}
		openDirs(d.upper)
		if spec.CachesDir != "" {
			os.Chmod(filepath.Join(filepath.Dir(d.cache), cacheWork, "work"), 0o700)
			openDirs(d.cache)
		}
	}
	proc.Gate = func() error {
		_, err := goW.Write([]byte("go\n"))
		goW.Close()
		return err
	}
	var trace *openTrace
	if traceIDs != nil {
		trace, traceErr, err = startTraced(traceIDs, proc.StartHeld)
	} else {
		err = proc.StartHeld()
	}
	launched := false
	defer func() {
		if trace != nil && !launched {
			close(trace.released)
		}
	}()
	specR.Close()
	readyW.Close()
	goR.Close()
	mountsInit.Close()
	if err != nil {
		return nil, fmt.Errorf("%w: start sandbox init: %v", sandbox.ErrUnavailable, err)
	}
	if err := lim.attach(c.Process.Pid); err != nil {
		proc.Kill()
		return nil, err
	}
	json.NewEncoder(specW).Encode(init)
	specW.Close()
	if asRoot {
		fds, err := detach(view.stages, c.Process.Pid)
		if err == nil {
			err = sendMounts(mountsHost, fds)
			closeAll(fds)
		}
		if err != nil {
			proc.Kill()
			proc.Wait()
			return nil, fmt.Errorf("%w: %v", sandbox.ErrUnavailable, err)
		}
	}
	docker, err := receiveSocket(mountsHost, "decoy socket")
	proxy := -1
	if err == nil && spec.Proxy != nil {
		if proxy, err = receiveSocket(mountsHost, "proxy socket"); err == nil && proxy < 0 {
			err = fmt.Errorf("%w: the sandbox could not make its network proxy's socket", sandbox.ErrUnavailable)
		}
	}
	var rec *recorder
	if err == nil {
		rec, err = receiveListener(mountsHost)
	}
	if err == nil && rec.unavailable != "" && spec.RequireEscapeRecording {
		err = fmt.Errorf("%w: policy sets bwrap.require_recording, and the sandbox cannot record escape attempts here: %s", sandbox.ErrUnavailable, rec.unavailable)
	}
	if err == nil {
		err = waitReady(ctx, readyR, proc)
	}
	if err != nil {
		for _, fd := range []int{docker, proxy} {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
		proc.Kill()
		goW.Close()
		proc.Wait()
		return nil, err
	}
	if proxy >= 0 {
		serveProxy(spec.Proxy, proxy)
	}
	rec.shared = view.shared
	if trace != nil {
		if rec.trace, err = newTracer(trace, rec, spec.ReadOnlyWork); err != nil {
			proc.Kill()
			goW.Close()
			proc.Wait()
			return nil, err
		}
		rec.trace.start()
	} else if traceErr != nil {
		rec.opensUnrecorded = traceErr.Error()
	}
	launched = true
	rec.enforce.Store(true) // from here on, only the agent makes refused calls
	first := sandboxPID(c.Process.Pid)
	lim.started(first)
	lim.openScratch(c.Process.Pid)
	rec.decoys = watchDecoys(c.Process.Pid, first, docker, rec)
	shared.open(c.Process.Pid)
	return &process{Proc: proc, sharedFiles: shared, counters: openCounters(first), recorder: rec, holders: []int{c.Process.Pid, first}}, nil
}

// waitReady waits for the gate's byte. A sandbox that exits first failed to
// set up: its output says why.
func waitReady(ctx context.Context, ready io.ReadCloser, proc *sandbox.Proc) error {
	defer ready.Close()
	got := make(chan error, 1)
	go func() {
		b := make([]byte, 1)
		_, err := io.ReadFull(ready, b)
		got <- err
	}()
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	select {
	case err := <-got:
		if err == nil {
			return nil
		}
		<-proc.Exited()
		return fmt.Errorf("%w: the sandbox did not start: %s", sandbox.ErrUnavailable, diagnose(proc.Early()))
	case <-timeout.C:
		return fmt.Errorf("%w: the sandbox did not start within 30s", sandbox.ErrUnavailable)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// diagnose turns the sandbox's setup output into one line with a remedy.
func diagnose(out string) string {
	line := strings.TrimSpace(out)
	if sc := bufio.NewScanner(strings.NewReader(out)); sc.Scan() {
		line = strings.TrimSpace(sc.Text())
	}
	switch {
	case strings.Contains(out, "mount overlay"):
		return line + " (overlayfs in a user namespace needs Linux 5.11 or later and modprobe overlay, and the repository on a local file system with user extended attributes: ext4, xfs, btrfs, or tmpfs from Linux 6.6)"
	case strings.Contains(out, "uid map") || strings.Contains(out, "user namespace") || strings.Contains(out, "No permissions to create new namespace"):
		return line + " (user namespaces must be enabled for your user)"
	case line == "":
		return "it exited without a word"
	}
	return line
}
