package bwrap

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// InitArg is the hidden first argument with which git-lease re-executes
// itself as the sandbox's init: a process in a private user and mount
// namespace that mounts the lease's overlay and then becomes bwrap.
const InitArg = "__sandbox-init"

// initSpec travels from the host to the init on file descriptor 3.
type initSpec struct {
	Lower, Upper, Work, Merged string
	Bwrap                      string
	Options                    []string // bwrap's options, passed on a pipe so that no process shows them
	Command                    []string // what bwrap runs: the gate, then the agent
	Rlimits                    []rlimit
}

type rlimit struct {
	Resource int
	Soft     uint64
	Hard     uint64
}

// Init runs as the sandbox's init and never returns: it reports a setup
// failure on standard error and exits 125, or execs bwrap. It runs with an
// empty environment, so bwrap and everything under it start with one too.
func Init() {
	err := initSandbox()
	fmt.Fprintf(os.Stderr, "git-lease sandbox: %v\n", err)
	os.Exit(125)
}

func initSandbox() error {
	f := os.NewFile(3, "spec")
	var spec initSpec
	if err := json.NewDecoder(f).Decode(&spec); err != nil {
		return fmt.Errorf("read spec: %w", err)
	}
	f.Close()
	if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	// The layers are passed as /proc/self/fd paths so that no host path
	// needs escaping in the option string (overlayfs splits on ',' and ':').
	var fds []any
	for _, dir := range []string{spec.Lower, spec.Upper, spec.Work} {
		fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open %s: %w", dir, err)
		}
		fds = append(fds, fd)
	}
	opts := fmt.Sprintf("lowerdir=/proc/self/fd/%d,upperdir=/proc/self/fd/%d,workdir=/proc/self/fd/%d,userxattr", fds...)
	if err := unix.Mount("overlay", spec.Merged, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount overlay: %w", err)
	}
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		return err
	}
	args := strings.Join(spec.Options, "\x00") + "\x00"
	if len(args) > 60000 {
		return fmt.Errorf("sandbox arguments too long (%d bytes)", len(args))
	}
	if _, err := unix.Write(p[1], []byte(args)); err != nil {
		return err
	}
	unix.Close(p[1])
	path, err := unix.BytePtrFromString(spec.Bwrap)
	if err != nil {
		return err
	}
	argv, err := syscall.SlicePtrFromStrings(append([]string{"bwrap", "--args", fmt.Sprint(p[0]), "--"}, spec.Command...))
	if err != nil {
		return err
	}
	env := []*byte{nil}
	limits := make([]unix.Rlimit, len(spec.Rlimits))
	for i, l := range spec.Rlimits {
		limits[i] = unix.Rlimit{Cur: l.Soft, Max: l.Hard}
	}
	// From here to exec nothing allocates: with RLIMIT_DATA set, the Go
	// runtime could fail to grow its heap and die before bwrap starts.
	for i, l := range spec.Rlimits {
		if err := unix.Setrlimit(l.Resource, &limits[i]); err != nil {
			return fmt.Errorf("set rlimit %d: %w", l.Resource, err)
		}
	}
	_, _, errno := syscall.RawSyscall(syscall.SYS_EXECVE, uintptr(unsafe.Pointer(path)), uintptr(unsafe.Pointer(&argv[0])), uintptr(unsafe.Pointer(&env[0])))
	return fmt.Errorf("exec bwrap: %w", errno)
}
