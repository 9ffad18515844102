package bwrap

import (
	"bytes"
	"path"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// An agent may write its own places only: /work, /tmp, its home, /dev/shm
// (and the lease's writable files). Everything else is read-only and the
// kernel refuses a write there, silently for the record. To record it, the
// filter also sends the calls that create, remove, rename, chmod or link a
// path (not open: see watchedCalls) to the recorder, which reads the path from the caller's
// memory, resolves it against the caller's directory or descriptor in its
// own mount namespace, records it when it is outside those places, and
// lets the kernel give its normal answer (SECCOMP_USER_NOTIF_FLAG_CONTINUE).
// The record is of what the agent asked: a thread of the agent could change
// the path between the recorder's reading and the kernel's, which changes
// what is recorded, never what is allowed.

// watchedCall is a call the recorder looks at: the arguments holding its
// paths, each with the argument holding its directory descriptor (-1: the
// path is relative to the working directory), and the flags that make it a
// write, when not every call is one.
// A mkdir of a directory that exists writes nothing (mkdir -p makes one of
// each ancestor), so it is recorded only when its path is free.
type watchedCall struct {
	nr    uint32
	name  string
	paths []pathArg
	check *argCheck
	mkdir bool
}

type pathArg struct{ dirfd, path int }

// watchedCalls are the write-class calls of every architecture but open:
// a build opens files to write by the ten thousand, and looking at each
// costs it about a fifth of its CPU time (BenchmarkEscapeRecording), four
// times the budget, while it removes, renames and creates directories by
// the dozen. A write outside that begins with an open is refused by the
// kernel all the same, unrecorded.
var watchedCalls = append([]watchedCall{
	{unix.SYS_MKDIRAT, "mkdirat", []pathArg{{0, 1}}, nil, true},
	{unix.SYS_MKNODAT, "mknodat", []pathArg{{0, 1}}, nil, false},
	{unix.SYS_UNLINKAT, "unlinkat", []pathArg{{0, 1}}, nil, false},
	{unix.SYS_RENAMEAT, "renameat", []pathArg{{0, 1}, {2, 3}}, nil, false},
	{unix.SYS_RENAMEAT2, "renameat2", []pathArg{{0, 1}, {2, 3}}, nil, false},
	{unix.SYS_LINKAT, "linkat", []pathArg{{2, 3}}, nil, false},
	{unix.SYS_SYMLINKAT, "symlinkat", []pathArg{{1, 2}}, nil, false},
	{unix.SYS_FCHMODAT, "fchmodat", []pathArg{{0, 1}}, nil, false},
	{unix.SYS_FCHMODAT2, "fchmodat2", []pathArg{{0, 1}}, nil, false},
	{unix.SYS_FCHOWNAT, "fchownat", []pathArg{{0, 1}}, nil, false},
	{unix.SYS_TRUNCATE, "truncate", []pathArg{{-1, 0}}, nil, false},
}, archWatchedCalls...)

// findWatched finds the watched call nr, if it is one.
func findWatched(nr uint32) (watchedCall, bool) {
	for _, w := range watchedCalls {
		if w.nr == nr {
			return w, true
		}
	}
	return watchedCall{}, false
}

// writablePlaces are the agent's own places, by prefix: its tree, its
// scratch places, the devices and /proc files every shell writes (a
// redirection to /dev/null, a process's own /proc entries).
var writablePlaces = []string{workDir, "/tmp", agentHome, "/dev/shm", "/dev/null", "/dev/zero", "/dev/full",
	"/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx", "/dev/pts", "/dev/fd", "/dev/stdin", "/dev/stdout",
	"/dev/stderr", "/proc/self", "/proc/thread-self"}

// outside reports whether p, an absolute clean path, is outside the
// agent's writable places and the lease's writable files (shared).
func outside(p string, shared map[string]string) bool {
	if _, ok := shared[p]; ok {
		return false
	}
	for _, w := range writablePlaces {
		if p == w || strings.HasPrefix(p, w+"/") {
			return false
		}
	}
	// A process's own /proc entries, by number.
	if rest, ok := strings.CutPrefix(p, "/proc/"); ok {
		pid, _, _ := strings.Cut(rest, "/")
		if _, err := strconv.Atoi(pid); err == nil {
			return false
		}
	}
	return true
}

// writtenPaths are the paths a watched call names, as the agent gave them
// and made absolute against its directory or descriptor; nil when the
// caller is gone or its memory cannot be read.
func writtenPaths(pid uint32, w watchedCall, args [6]uint64) []string {
	var out []string
	for _, a := range w.paths {
		p, ok := readString(int(pid), uintptr(args[a.path]))
		if !ok {
			return nil
		}
		if !strings.HasPrefix(p, "/") {
			dir := "/proc/" + strconv.Itoa(int(pid)) + "/cwd"
			if a.dirfd >= 0 && int32(args[a.dirfd]) != unix.AT_FDCWD {
				dir = "/proc/" + strconv.Itoa(int(pid)) + "/fd/" + strconv.Itoa(int(int32(args[a.dirfd])))
			}
			// The link reads as the caller sees it: its mount namespace's
			// root is where the walk up ends.
			base, err := readlink(dir)
			if err != nil {
				return nil
			}
			p = base + "/" + p
		}
		out = append(out, path.Clean(p))
	}
	return out
}

// readString reads a NUL-terminated string of at most PATH_MAX bytes at
// addr in pid's memory.
func readString(pid int, addr uintptr) (string, bool) {
	buf := make([]byte, unix.PathMax)
	got := 0
	for got < len(buf) {
		// Up to the end of the page, so that a string that ends before
		// an unmapped page is read whole.
		chunk := min(len(buf)-got, 4096-int((addr+uintptr(got))%4096))
		n, err := unix.ProcessVMReadv(pid, []unix.Iovec{{Base: &buf[got], Len: uint64(chunk)}},
			[]unix.RemoteIovec{{Base: addr + uintptr(got), Len: chunk}}, 0)
		if err != nil || n <= 0 {
			return "", false
		}
		if i := bytes.IndexByte(buf[got:got+n], 0); i >= 0 {
			return string(buf[:got+i]), true
		}
		got += n
	}
	return "", false
}

// exists reports whether p is a file in pid's view.
func exists(pid uint32, p string) bool {
	var st unix.Stat_t
	return unix.Lstat("/proc/"+strconv.Itoa(int(pid))+"/root"+p, &st) == nil
}

func readlink(p string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlink(p, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// notificationValid reports whether the call id still waits: its caller
// has not died (and its pid been reused) since it was received.
func notificationValid(listener int, id uint64) bool {
	return ioctl(listener, unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&id)) == nil
}
