package bwrap

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/git-lease/git-lease/sandbox"
)

// InitArg is the hidden first argument with which git-lease re-executes
// itself as the sandbox's init: a process in a private user and mount
// namespace that stages the lease's files, mounts its overlay and then
// becomes bwrap.
const InitArg = "__sandbox-init"

// The init's descriptors, as the host hands them over: the spec, the
// gate's ready and go pipes (which cross into the sandbox, to its PID 1),
// and the socket on which the host sends the stages' mounts (root only)
// and the init returns the decoy docker socket, the network proxy's socket
// (with a network) and its seccomp filter's listener.
const (
	fdSpec   = 3
	fdReady  = 4
	fdGo     = 5
	fdMounts = 6
	fdSelf   = 7 // the binary the init was exec'd from
)

// initSpec travels from the host to the init on fdSpec.
type initSpec struct {
	Stages  []stage
	Mounts  bool              // the stages' mounts come on fdMounts
	Served  bool              // /work is staged as stageMerged: no overlay
	Etc     map[string]string // generated /etc files
	Scratch string            // the scratch tmpfs's mount options
	Files   map[string]sandboxFile
	Self    bool // copy the binary (fdSelf) to the staging tmpfs (see copySelf)
	Caches  bool // mount the cache overlay (see mountCaches)
	Proxy   bool // make the network proxy's socket and hand it to the host
	Bwrap   string
	Options []string // bwrap's options, passed on a pipe so that no process shows them
	Command []string // what bwrap runs: the gate, then the agent
	Seccomp []byte   // the filter bwrap installs when the init cannot install Notify
	Notify  []byte   // the filter the init installs with a listener for the host
	Rlimits []rlimit
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
	runtime.LockOSThread() // the seccomp filter is the thread's that execs bwrap
	f := os.NewFile(fdSpec, "spec")
	var spec initSpec
	if err := json.NewDecoder(f).Decode(&spec); err != nil {
		return fmt.Errorf("read spec: %w", err)
	}
	f.Close()
	var fds []int
	if spec.Mounts {
		var err error
		if fds, err = receiveMounts(fdMounts, len(spec.Stages)); err != nil {
			return err
		}
	}
	if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if err := stageAll(spec, fds); err != nil {
		return err
	}
	unix.Close(fdSelf)
	// A new session is not a new session keyring: without this the agent
	// would possess the launcher's keyring and every key in it.
	if _, _, errno := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0); errno != 0 {
		return fmt.Errorf("join a new session keyring: %w", errno)
	}
	args := strings.Join(spec.Options, "\x00") + "\x00"
	if len(args) > 60000 {
		return fmt.Errorf("sandbox arguments too long (%d bytes)", len(args))
	}
	argsFD, err := pipeWith([]byte(args))
	if err != nil {
		return err
	}
	bwrapArgs := []string{"bwrap", "--args", fmt.Sprint(argsFD)}
	keep := []int{fdReady, fdGo, argsFD}
	if err := sendSocket(fdMounts, listenDecoy()); err != nil {
		return fmt.Errorf("hand over the decoy socket: %w", err)
	}
	if spec.Proxy {
		if err := sendSocket(fdMounts, listenSocket(filepath.Join(stageDir, stageScratch, proxySocket))); err != nil {
			return fmt.Errorf("hand over the proxy socket: %w", err)
		}
	}
	listener, notifyErr := installRecorded(spec.Notify)
	if err := sendListener(fdMounts, listener, notifyErr); err != nil {
		return fmt.Errorf("hand over the seccomp listener: %w", err)
	}
	unix.Close(fdMounts)
	if notifyErr != nil {
		seccompFD, err := pipeWith(spec.Seccomp)
		if err != nil {
			return err
		}
		bwrapArgs = append(bwrapArgs, "--seccomp", fmt.Sprint(seccompFD))
		keep = append(keep, seccompFD)
	}
	// Only the gate's pipes and bwrap's own inputs cross into bwrap: a
	// descriptor the host inherited without close-on-exec would otherwise
	// reach the agent (a directory descriptor opens the host's files).
	if err := sandbox.CloseOnExec(keep...); err != nil {
		return err
	}
	path, err := unix.BytePtrFromString(spec.Bwrap)
	if err != nil {
		return err
	}
	argv, err := syscall.SlicePtrFromStrings(append(append(bwrapArgs, "--"), spec.Command...))
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

// pipeWith returns the read end of a pipe that holds b (at most a pipe's
// buffer) and then ends; bwrap reads it to the end.
func pipeWith(b []byte) (int, error) {
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		return 0, err
	}
	defer unix.Close(p[1])
	for len(b) > 0 {
		n, err := unix.Write(p[1], b)
		if err != nil {
			unix.Close(p[0])
			return 0, err
		}
		b = b[n:]
	}
	return p[0], nil
}
