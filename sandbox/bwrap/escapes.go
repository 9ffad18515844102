package bwrap

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/git-lease/git-lease/sandbox"
)

// The sandbox records what its seccomp filter refuses. A filter that
// answers a call with an errno tells no one, and of several filters the
// kernel takes the most severe answer (an errno wins over a notification),
// so there is one filter, and its refusals are user notifications: the
// kernel stops the caller and asks the holder of the filter's listener,
// the host's recorder, which records the call and answers the rule's
// errno. Should the recorder be gone, the kernel answers ENOSYS: the call
// is refused all the same.
//
// Only the process that installs a filter gets its listener, and bwrap
// cannot make one, so the sandbox's init installs it just before it execs
// bwrap, and hands the listener to the host on the mounts socket. bwrap's
// own setup (its mounts, its namespaces) then runs under the filter too:
// the recorder lets those calls through until the gate reports the sandbox
// ready, before which only bwrap and the gate have run. From then on every
// refused call is the agent's.

// maxEscapeAttempts bounds the distinct attempts kept; the rest are counted.
const maxEscapeAttempts = 64

// seccompNotif and seccompNotifResp are the kernel's struct seccomp_notif
// (with its struct seccomp_data) and struct seccomp_notif_resp.
type seccompNotif struct {
	id    uint64
	pid   uint32
	flags uint32
	nr    int32
	arch  uint32
	ip    uint64
	args  [6]uint64
}

type seccompNotifResp struct {
	id    uint64
	val   int64
	error int32
	flags uint32
}

// recorder serves a filter's listener while the sandbox runs, and records
// what the decoys' watch sees. Without a listener it records no refused
// call, and unavailable says why.
type recorder struct {
	listener    int
	unavailable string
	enforce     atomic.Bool // the gate reported ready: refuse and record
	done        chan struct{}
	decoys      *decoyWatch
	shared      map[string]string // the lease's writable files, by sandbox path
	// trace records the refused opens; without it, opensUnrecorded says
	// why they go unrecorded (unless the filter sends them, record_opens).
	trace           *tracer
	opensUnrecorded string

	mu       sync.Mutex
	attempts []sandbox.EscapeAttempt
	omitted  int
}

// newRecorder serves listener until no process uses its filter any more.
func newRecorder(listener int) *recorder {
	r := &recorder{listener: listener, done: make(chan struct{})}
	go r.serve()
	return r
}

func (r *recorder) serve() {
	defer close(r.done)
	defer unix.Close(r.listener)
	// Each write-class call of the agent waits for this loop: one thread
	// that the kernel wakes, and switches to directly where it can
	// (Linux 6.6), costs the agent least. It is unlocked before the loop
	// returns: a goroutine that ends locked takes its thread down, and
	// every child forked from that thread with a parent-death signal (a
	// sandbox init of another lease in this process) would be killed.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	unix.Syscall(unix.SYS_IOCTL, uintptr(r.listener), unix.SECCOMP_IOCTL_NOTIF_SET_FLAGS, unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)
	for {
		// The listener hangs up once the filter's last process is gone; a
		// receive would wait forever then.
		fds := []unix.PollFd{{Fd: int32(r.listener), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err == unix.EINTR {
			continue
		} else if err != nil || fds[0].Revents&unix.POLLIN == 0 {
			return
		}
		var n seccompNotif // the kernel wants it zeroed
		if err := ioctl(r.listener, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&n)); err != nil {
			if err == unix.EINTR || err == unix.ENOENT { // the caller died meanwhile
				continue
			}
			return
		}
		resp := seccompNotifResp{id: n.id, flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
		if w, watched := findWatched(uint32(n.nr)); watched && r.enforce.Load() {
			for _, p := range writesOutside(&n, w, r.shared) {
				if notificationValid(r.listener, n.id) {
					r.record("write-outside", w.name, p)
				}
			}
		} else if r.enforce.Load() {
			resp.error, resp.flags = -int32(r.refuse(uint32(n.nr), n.args)), 0
		}
		// ENOENT: the caller died or was interrupted; nothing to answer.
		ioctl(r.listener, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp))
	}
}

func ioctl(fd int, req uintptr, arg unsafe.Pointer) error {
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(arg)); errno != 0 {
		return errno
	}
	return nil
}

// refuse records a refused call and returns the errno its rule answers.
func (r *recorder) refuse(nr uint32, args [6]uint64) unix.Errno {
	entry, rule, ok := refusal(nr, args)
	if !ok {
		// The filter notifies only what a rule refuses; refuse anything
		// else it might send all the same.
		entry, rule.errno = "unknown", unix.EPERM
	}
	r.record(entry, syscallName(nr), describeCall(nr, args))
	return rule.errno
}

// record counts one attempt: a new one while there is room, else in
// omitted.
func (r *recorder) record(rule, syscall, call string) {
	now := time.Now().UTC()
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.attempts {
		if a := &r.attempts[i]; a.Rule == rule && a.Syscall == syscall && a.Call == call {
			a.Count++
			a.Last = now
			return
		}
	}
	if len(r.attempts) == maxEscapeAttempts {
		r.omitted++
		return
	}
	r.attempts = append(r.attempts, sandbox.EscapeAttempt{Rule: rule, Syscall: syscall, Call: call, Count: 1, First: now, Last: now})
}

// finish waits until the listener has hung up, which it does once the
// sandbox's last process is gone (at most a grace period after Wait:
// the kernel frees the filter as it reaps them), and returns the record.
func (r *recorder) finish() sandbox.Escapes {
	select {
	case <-r.done:
	case <-time.After(5 * time.Second):
	}
	r.decoys.finish()
	e := sandbox.Escapes{Unavailable: r.unavailable, OpensUnrecorded: r.opensUnrecorded}
	var how []string
	if r.unavailable == "" {
		how = append(how, "seccomp user notification")
	}
	if r.trace != nil {
		how = append(how, "perf tracepoints on refused opens")
		e.OpensUnrecorded = r.trace.finish()
	}
	if r.decoys != nil {
		how = append(how, "inotify on decoy credentials")
	}
	e.Recording = strings.Join(how, ", ")
	r.mu.Lock()
	defer r.mu.Unlock()
	e.Attempts, e.Omitted = append([]sandbox.EscapeAttempt(nil), r.attempts...), r.omitted
	return e
}

// refusal finds the rule that refuses call nr with args, as the filter
// decides it, and its entry's name.
func refusal(nr uint32, args [6]uint64) (string, seccompRule, bool) {
	for _, e := range seccompEntries {
		for _, rule := range e.rules {
			if rule.nr == nr && (rule.check == nil || rule.check.matches(uint32(args[rule.check.arg]))) {
				return e.name, rule, true
			}
		}
	}
	return "", seccompRule{}, false
}

// matches is the filter's test of argument value v.
func (c *argCheck) matches(v uint32) bool {
	if c.mask != 0 {
		return v&c.mask != 0
	}
	in := false
	for _, want := range c.values {
		in = in || v == want
	}
	return in == c.in
}

// describeCall names a refused call with the arguments that decide what
// it would have done: the namespaces asked for, the ioctl, the persona.
// Pointers are not read: what they point to is the agent's to change.
func describeCall(nr uint32, args [6]uint64) string {
	name := syscallName(nr)
	switch nr {
	case unix.SYS_CLONE:
		// clone's low byte is the exit signal, where unshare has CLONE_NEWTIME.
		return fmt.Sprintf("%s(%s)", name, namespaceFlags(args[0]&^0xff))
	case unix.SYS_UNSHARE:
		return fmt.Sprintf("%s(%s)", name, namespaceFlags(args[0]))
	case unix.SYS_SETNS:
		return fmt.Sprintf("%s(%s)", name, namespaceFlags(args[1]))
	case unix.SYS_IOCTL:
		switch uint32(args[1]) {
		case unix.TIOCSTI:
			return "ioctl(TIOCSTI)"
		case unix.TIOCLINUX:
			return "ioctl(TIOCLINUX)"
		}
		return fmt.Sprintf("ioctl(%#x)", uint32(args[1]))
	case unix.SYS_PERSONALITY:
		return fmt.Sprintf("personality(%#x)", uint32(args[0]))
	case unix.SYS_KEYCTL, unix.SYS_BPF:
		return fmt.Sprintf("%s(%d)", name, uint32(args[0]))
	}
	return name
}

// namespaceNames are the namespace flags by name, in the kernel's order.
var namespaceNames = []struct {
	flag uint64
	name string
}{
	{unix.CLONE_NEWTIME, "CLONE_NEWTIME"}, {unix.CLONE_NEWNS, "CLONE_NEWNS"}, {unix.CLONE_NEWCGROUP, "CLONE_NEWCGROUP"},
	{unix.CLONE_NEWUTS, "CLONE_NEWUTS"}, {unix.CLONE_NEWIPC, "CLONE_NEWIPC"}, {unix.CLONE_NEWUSER, "CLONE_NEWUSER"},
	{unix.CLONE_NEWPID, "CLONE_NEWPID"}, {unix.CLONE_NEWNET, "CLONE_NEWNET"},
}

// namespaceFlags names the namespace flags in flags, or gives its value
// when it has none.
func namespaceFlags(flags uint64) string {
	var names []string
	for _, n := range namespaceNames {
		if flags&n.flag != 0 {
			names = append(names, n.name)
		}
	}
	if len(names) == 0 {
		return fmt.Sprintf("%#x", flags)
	}
	return strings.Join(names, "|")
}

// syscallName names a refused system call.
func syscallName(nr uint32) string {
	if name, ok := syscallNames[nr]; ok {
		return name
	}
	if name, ok := archSyscallNames[nr]; ok {
		return name
	}
	return fmt.Sprintf("syscall %d", nr)
}

// syscallNames are the refused calls of every architecture, by number.
var syscallNames = map[uint32]string{
	unix.SYS_ADD_KEY: "add_key", unix.SYS_KEYCTL: "keyctl", unix.SYS_REQUEST_KEY: "request_key",
	unix.SYS_MOUNT: "mount", unix.SYS_UMOUNT2: "umount2", unix.SYS_PIVOT_ROOT: "pivot_root", unix.SYS_CHROOT: "chroot",
	unix.SYS_MOVE_MOUNT: "move_mount", unix.SYS_OPEN_TREE: "open_tree", unix.SYS_OPEN_TREE_ATTR: "open_tree_attr",
	unix.SYS_FSOPEN: "fsopen", unix.SYS_FSCONFIG: "fsconfig", unix.SYS_FSMOUNT: "fsmount", unix.SYS_FSPICK: "fspick",
	unix.SYS_MOUNT_SETATTR: "mount_setattr",
	unix.SYS_UNSHARE:       "unshare", unix.SYS_SETNS: "setns", unix.SYS_CLONE: "clone", unix.SYS_CLONE3: "clone3",
	unix.SYS_BPF: "bpf", unix.SYS_PERF_EVENT_OPEN: "perf_event_open", unix.SYS_LOOKUP_DCOOKIE: "lookup_dcookie",
	unix.SYS_USERFAULTFD:    "userfaultfd",
	unix.SYS_IO_URING_SETUP: "io_uring_setup", unix.SYS_IO_URING_ENTER: "io_uring_enter", unix.SYS_IO_URING_REGISTER: "io_uring_register",
	unix.SYS_INIT_MODULE: "init_module", unix.SYS_FINIT_MODULE: "finit_module", unix.SYS_DELETE_MODULE: "delete_module",
	unix.SYS_KEXEC_LOAD: "kexec_load", unix.SYS_KEXEC_FILE_LOAD: "kexec_file_load",
	unix.SYS_OPEN_BY_HANDLE_AT: "open_by_handle_at", unix.SYS_SYSLOG: "syslog",
	unix.SYS_SETTIMEOFDAY: "settimeofday", unix.SYS_CLOCK_SETTIME: "clock_settime", unix.SYS_CLOCK_ADJTIME: "clock_adjtime",
	unix.SYS_ADJTIMEX: "adjtimex",
	unix.SYS_ACCT:     "acct", unix.SYS_SWAPON: "swapon", unix.SYS_SWAPOFF: "swapoff", unix.SYS_REBOOT: "reboot",
	unix.SYS_QUOTACTL: "quotactl", unix.SYS_QUOTACTL_FD: "quotactl_fd", unix.SYS_VHANGUP: "vhangup",
	unix.SYS_PERSONALITY: "personality", unix.SYS_FANOTIFY_INIT: "fanotify_init", unix.SYS_IOCTL: "ioctl",
}

// installRecorded installs filter on the calling thread, which must stay
// locked to it until it execs, and returns the filter's listener. The
// init may do so without no_new_privs: it holds CAP_SYS_ADMIN in its own
// user namespace.
func installRecorded(filter []byte) (int, error) {
	if len(filter) == 0 {
		return -1, fmt.Errorf("no filter")
	}
	prog := unix.SockFprog{Len: uint16(len(filter) / 8), Filter: (*unix.SockFilter)(unsafe.Pointer(&filter[0]))}
	fd, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&prog)))
	if errno != 0 {
		// EBUSY: a filter of an outer sandbox already has a listener, and
		// a process may be under only one.
		return -1, fmt.Errorf("seccomp user notification: %w", errno)
	}
	return int(fd), nil
}

// sendListener hands the host the listener (or why there is none) on the
// mounts socket.
func sendListener(sock, listener int, err error) error {
	if err != nil {
		return unix.Sendmsg(sock, []byte("u"+err.Error()), nil, nil, 0)
	}
	defer unix.Close(listener)
	return unix.Sendmsg(sock, []byte{'l'}, unix.UnixRights(listener), nil, 0)
}

// receiveListener is the host's side of sendListener: a recorder serving
// the listener, or one that says why the init could not install it.
func receiveListener(sock *os.File) (*recorder, error) {
	b := make([]byte, 512)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(int(sock.Fd()), b, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil || n == 0 {
		return nil, fmt.Errorf("the sandbox's init did not report its seccomp filter (%v)", err)
	}
	if b[0] == 'u' {
		return &recorder{unavailable: string(b[1:n]), done: closed()}, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("receive the seccomp listener: %d messages, %v", len(msgs), err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return nil, fmt.Errorf("receive the seccomp listener: %d descriptors, %v", len(fds), err)
	}
	return newRecorder(fds[0]), nil
}

func closed() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}
