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
// path, and the opens that ask to write, create or truncate (see
// writeIntent), to the recorder, which reads the path from the caller's
// memory, resolves it against the caller's directory or descriptor in its
// own mount namespace, records it when it is outside those places, and
// lets the kernel give its normal answer (SECCOMP_USER_NOTIF_FLAG_CONTINUE).
// The record is of what the agent asked: a thread of the agent could change
// the path between the recorder's reading and the kernel's, which changes
// what is recorded, never what is allowed.

// watchedCall is a call the recorder looks at: the arguments holding its
// paths, each with the argument holding its directory descriptor (-1: the
// path is relative to the working directory), and, for an open, the test
// of its flags that the filter makes (check) and how the recorder reads
// them (flags).
// A mkdir of a directory that exists writes nothing (mkdir -p makes one of
// each ancestor), so it is recorded only when its path is free.
type watchedCall struct {
	nr    uint32
	name  string
	paths []pathArg
	check *argCheck
	mkdir bool
	flags openFlags
}

type pathArg struct{ dirfd, path int }

// openFlags reads an open's flags from its arguments, or from the caller's
// memory; nil for a call that is no open.
type openFlags func(pid uint32, args [6]uint64) (uint64, bool)

// writeIntent are the open flags that make an open a write. The filter
// sends only the opens with one of them: a build opens files to read many
// times more often than to write, and an open the filter lets through
// costs it next to nothing.
const writeIntent = unix.O_WRONLY | unix.O_RDWR | unix.O_CREAT | unix.O_TRUNC

// flagsArg reads an open's flags from argument i.
func flagsArg(i int) openFlags {
	return func(_ uint32, args [6]uint64) (uint64, bool) { return args[i], true }
}

// creatFlags are creat's, which takes none.
func creatFlags(uint32, [6]uint64) (uint64, bool) {
	return unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC, true
}

// openHowFlags reads openat2's flags, the first field of its struct
// open_how, from the caller's memory: the filter cannot, so it sends every
// openat2, which glibc and Go never make for an ordinary open.
func openHowFlags(pid uint32, args [6]uint64) (uint64, bool) {
	var b [8]byte
	n, err := unix.ProcessVMReadv(int(pid), []unix.Iovec{{Base: &b[0], Len: 8}}, []unix.RemoteIovec{{Base: uintptr(args[2]), Len: 8}}, 0)
	if err != nil || n != 8 {
		return 0, false
	}
	return *(*uint64)(unsafe.Pointer(&b[0])), true
}

// watchedCalls are the write-class calls of every architecture but open.
var watchedCalls = append([]watchedCall{
	{unix.SYS_MKDIRAT, "mkdirat", []pathArg{{0, 1}}, nil, true, nil},
	{unix.SYS_MKNODAT, "mknodat", []pathArg{{0, 1}}, nil, false, nil},
	{unix.SYS_UNLINKAT, "unlinkat", []pathArg{{0, 1}}, nil, false, nil},
	{unix.SYS_RENAMEAT, "renameat", []pathArg{{0, 1}, {2, 3}}, nil, false, nil},
	{unix.SYS_RENAMEAT2, "renameat2", []pathArg{{0, 1}, {2, 3}}, nil, false, nil},
	{unix.SYS_LINKAT, "linkat", []pathArg{{2, 3}}, nil, false, nil},
	{unix.SYS_SYMLINKAT, "symlinkat", []pathArg{{1, 2}}, nil, false, nil},
	{unix.SYS_FCHMODAT, "fchmodat", []pathArg{{0, 1}}, nil, false, nil},
	{unix.SYS_FCHMODAT2, "fchmodat2", []pathArg{{0, 1}}, nil, false, nil},
	{unix.SYS_FCHOWNAT, "fchownat", []pathArg{{0, 1}}, nil, false, nil},
	{unix.SYS_TRUNCATE, "truncate", []pathArg{{-1, 0}}, nil, false, nil},
}, archWatchedCalls...)

// watchedOpens are the opens that ask to write, which the filter sends
// only where trusted policy asks for them ([bwrap] record_opens): a build
// opens files to write by the ten thousand, and each sent one costs it a
// round trip to the recorder, several times the budget of 5% on the
// build-like benchmark (BenchmarkEscapeRecording, and see the README).
// A write outside that begins with an open is refused by the kernel all
// the same.
var watchedOpens = append([]watchedCall{
	{unix.SYS_OPENAT, "openat", []pathArg{{0, 1}}, anyBit(2, writeIntent), false, flagsArg(2)},
	{unix.SYS_OPENAT2, "openat2", []pathArg{{0, 1}}, nil, false, openHowFlags},
}, archWatchedOpens...)

// findWatched finds the watched call nr, if it is one.
func findWatched(nr uint32) (watchedCall, bool) {
	for _, list := range [][]watchedCall{watchedCalls, watchedOpens} {
		for _, w := range list {
			if w.nr == nr {
				return w, true
			}
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

// writesOutside returns the paths outside the agent's places that the
// watched call w (notification n) would write, as the agent gave them.
// A path inside costs one read of the caller's memory (and of its
// directory's link, for a relative path): a build's writes are answered
// as fast as that.
func writesOutside(n *seccompNotif, w watchedCall, shared map[string]string) []string {
	var out []string
	for _, p := range writtenPaths(n.pid, w, n.args) {
		if !outside(p, shared) {
			continue
		}
		if w.mkdir {
			if _, err := statIn(n.pid, p, false); err == nil {
				continue
			}
		}
		if w.flags != nil && !openWrites(n.pid, p, w.flags, n.args) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// openWrites reports whether an open of p, with the flags that read
// returns, would write the tree: one that asks to write (or truncate) a regular
// file, or to create a file that is not there. A device, FIFO or socket
// opened to write is written without writing the tree, and O_CREAT alone
// opens a file that exists to read.
func openWrites(pid uint32, p string, read openFlags, args [6]uint64) bool {
	flags, ok := read(pid, args)
	if !ok || flags&unix.O_PATH != 0 || flags&writeIntent == 0 {
		return false
	}
	st, err := statIn(pid, p, flags&unix.O_NOFOLLOW == 0)
	if err != nil {
		return flags&unix.O_CREAT != 0
	}
	return st.Mode&unix.S_IFMT == unix.S_IFREG && flags&(unix.O_WRONLY|unix.O_RDWR|unix.O_TRUNC) != 0
}

// statIn stats p, an absolute path, in pid's view, following a symlink at
// its end when follow says so; every symlink on the way resolves within
// pid's root, never out of the sandbox.
func statIn(pid uint32, p string, follow bool) (unix.Stat_t, error) {
	var st unix.Stat_t
	root, err := unix.Open("/proc/"+strconv.Itoa(int(pid))+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return st, err
	}
	defer unix.Close(root)
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS}
	if !follow {
		how.Flags |= unix.O_NOFOLLOW
	}
	fd, err := unix.Openat2(root, p, &how)
	if err != nil {
		return st, err
	}
	defer unix.Close(fd)
	return st, unix.Fstat(fd, &st)
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
