package bwrap

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// probeEnv makes this test binary a probe (see TestMain): "none" tries
// every call unfiltered, "filter:NAMES" first installs the filter with the
// comma-separated entries let through, "x32" installs it and makes an x32
// call.
const probeEnv = "GIT_LEASE_SECCOMP_PROBE"

// TestMain lets this test binary serve as the probe of the seccomp tests.
func TestMain(m *testing.M) {
	if mode, ok := os.LookupEnv(probeEnv); ok {
		if script, ok := strings.CutPrefix(mode, "workload:"); ok {
			workload(script)
		}
		probe(mode)
	}
	os.Exit(m.Run())
}

// probe prints, as JSON, what each call returned ("ok" or the errno's
// name), and exits. Each refused call is made with arguments that do no
// harm when the filter lets it through: a path that does not exist, a
// descriptor that is not open, a pty of its own.
func probe(mode string) {
	names, filter := strings.CutPrefix(mode, "filter:")
	if filter || mode == "x32" {
		var allow []string
		if filter && names != "" {
			allow = strings.Split(names, ",")
		}
		prog, err := seccompFilter(allow, false, false)
		if err == nil {
			err = installFilter(prog)
		}
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(2)
		}
	}
	if mode == "x32" {
		unix.RawSyscall(x32SyscallBit|unix.SYS_GETPID, 0, 0, 0)
		os.Exit(0) // not reached: the filter kills the process
	}
	ptmx, tty, err := pty.Open()
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(2)
	}
	defer ptmx.Close()
	// char, path and tmpfs are captured by the calls, so they live on the
	// heap, where their addresses stay valid while the kernel reads them.
	char := byte('x')
	raw := func(nr uintptr, args ...uintptr) error {
		var a [6]uintptr
		copy(a[:], args)
		r, _, errno := unix.Syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])
		if errno == 0 && opensFD[nr] {
			unix.Close(int(r))
		}
		return errnoOrNil(errno)
	}
	path, _ := unix.BytePtrFromString("/nonexistent/git-lease-probe")
	tmpfs, _ := unix.BytePtrFromString("tmpfs")
	calls := map[string]func() error{
		// Ordinary calls, which the filter must let through.
		"getpid":            func() error { return raw(unix.SYS_GETPID) },
		"write and read":    writeAndRead,
		"exec /bin/true":    exec.Command("/bin/true").Run,
		"ioctl TCGETS":      func() error { _, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS); return err },
		"personality query": func() error { return raw(unix.SYS_PERSONALITY, 0xffffffff) },
		// Refused calls.
		"keyctl join": func() error { return raw(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0) },
		"add_key": func() error {
			_, err := unix.AddKey("user", "git-lease-probe", []byte("x"), unix.KEY_SPEC_PROCESS_KEYRING)
			return err
		},
		"unshare user":  func() error { return unix.Unshare(unix.CLONE_NEWUSER) },
		"setns":         func() error { return unix.Setns(-1, 0) },
		"clone new uts": cloneNewUTS,
		"clone3":        func() error { return raw(unix.SYS_CLONE3, 0, 0) },
		"mount": func() error {
			return raw(unix.SYS_MOUNT, uintptr(unsafe.Pointer(tmpfs)), uintptr(unsafe.Pointer(path)), uintptr(unsafe.Pointer(tmpfs)))
		},
		"fsopen":             func() error { return raw(unix.SYS_FSOPEN, uintptr(unsafe.Pointer(tmpfs)), unix.FSOPEN_CLOEXEC) },
		"bpf":                func() error { return raw(unix.SYS_BPF, 0xffff, 0, 0) },
		"perf_event_open":    func() error { return raw(unix.SYS_PERF_EVENT_OPEN, 0, 0, ^uintptr(0), ^uintptr(0), 0) },
		"userfaultfd":        func() error { return raw(unix.SYS_USERFAULTFD, unix.O_CLOEXEC) },
		"io_uring_setup":     func() error { return raw(unix.SYS_IO_URING_SETUP, 0, 0) },
		"finit_module":       func() error { return raw(unix.SYS_FINIT_MODULE, ^uintptr(0), 0, 0) },
		"open_by_handle_at":  func() error { return raw(unix.SYS_OPEN_BY_HANDLE_AT, ^uintptr(0), 0, 0) },
		"syslog size":        func() error { return raw(unix.SYS_SYSLOG, 10, 0, 0) },
		"settimeofday none":  func() error { return raw(unix.SYS_SETTIMEOFDAY, 0, 0) },
		"fanotify_init":      func() error { return raw(unix.SYS_FANOTIFY_INIT, 0, 0) },
		"personality norand": func() error { return raw(unix.SYS_PERSONALITY, 0x0040000) },
		"ioctl TIOCSTI":      func() error { return raw(unix.SYS_IOCTL, tty.Fd(), unix.TIOCSTI, uintptr(unsafe.Pointer(&char))) },
		"ioctl TIOCSTI high": func() error { return raw(unix.SYS_IOCTL, tty.Fd(), 1<<32|unix.TIOCSTI, uintptr(unsafe.Pointer(&char))) },
		"ioctl TIOCLINUX":    func() error { return raw(unix.SYS_IOCTL, tty.Fd(), unix.TIOCLINUX, uintptr(unsafe.Pointer(&char))) },
	}
	got := map[string]string{}
	for name, call := range calls {
		got[name] = "ok"
		var errno syscall.Errno
		if err := call(); errors.As(err, &errno) {
			got[name] = unix.ErrnoName(errno)
		} else if err != nil {
			got[name] = err.Error()
		}
	}
	json.NewEncoder(os.Stdout).Encode(got)
	os.Exit(0)
}

// opensFD are the probed calls that return a descriptor when they succeed.
var opensFD = map[uintptr]bool{unix.SYS_USERFAULTFD: true, unix.SYS_FSOPEN: true, unix.SYS_FANOTIFY_INIT: true}

func errnoOrNil(errno syscall.Errno) error {
	if errno == 0 {
		return nil
	}
	return errno
}

// installFilter does what bwrap does with the program: no new privileges,
// then the filter, on every thread of this (Go, so threaded) process.
func installFilter(prog []byte) error {
	runtime.LockOSThread() // no_new_privs is per thread; TSYNC copies it to the others
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	fprog := unix.SockFprog{Len: uint16(len(prog) / 8), Filter: (*unix.SockFilter)(unsafe.Pointer(&prog[0]))}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	if errno == 0 && r != 0 {
		return fmt.Errorf("seccomp: thread %d could not be synchronized", r)
	}
	return errnoOrNil(errno)
}

func writeAndRead() error {
	f, err := os.CreateTemp("", "git-lease-probe-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if _, err := f.WriteString("probe"); err != nil {
		return err
	}
	b, err := os.ReadFile(f.Name())
	if err == nil && string(b) != "probe" {
		err = fmt.Errorf("read back %q", b)
	}
	return err
}

// cloneNewUTS calls clone with a namespace flag, which os/exec never does.
// A child, made only when the filter lets the call through, exits before
// it could run any Go code.
func cloneNewUTS() error {
	pid, _, errno := unix.RawSyscall6(unix.SYS_CLONE, unix.CLONE_NEWUTS|uintptr(unix.SIGCHLD), 0, 0, 0, 0, 0)
	if errno != 0 {
		return errno
	}
	if pid == 0 {
		unix.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0)
	}
	_, err := unix.Wait4(int(pid), nil, 0, nil)
	return err
}
