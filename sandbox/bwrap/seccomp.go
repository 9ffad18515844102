package bwrap

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// The sandbox's seccomp filter refuses the system calls that no coding
// agent needs and that reach the parts of the kernel where sandbox escapes
// are found. It is a deny list, like Flatpak's, not an allow list, like
// Docker's default profile: an agent runs compilers, language runtimes and
// test suites that need the ordinary system calls, new ones included.
// Everything else the sandbox already takes away (capabilities, user
// namespaces, the network, the host's files) stays bwrap's job; the filter
// keeps the kernel code behind those checks out of reach as well.
//
// A refused call fails with EPERM, as it would for a process without the
// capability, unless its entry says otherwise. A call from another ABI (an
// i386 int 0x80 or x32 call on x86-64) kills the process: the filter reads
// syscall numbers of the native ABI only, so it cannot judge any other.
//
// ptrace stays allowed, as in Docker's profile (Flatpak refuses it outside
// --devel): the sandbox's own pid namespace confines it to the agent's own
// processes, where debuggers and strace are legitimate, and since Linux 4.8
// (the overlay needs 5.11) the kernel runs the filter after a tracer's
// changes, so tracing cannot smuggle a refused call past it.
//
// Trusted policy may let named entries through ([bwrap] seccomp_allow); a
// repository's .lease.toml may not.

// seccompEntries is the whole filter, one entry per reason, each compared
// with Docker's default profile and Flatpak's.
var seccompEntries = []seccompEntry{
	// Keys live in kernel-wide keyrings that no namespace separates, and
	// the keyring code has had its share of privilege escalations. Docker
	// and Flatpak refuse these too.
	{"keyring", refuse(unix.SYS_ADD_KEY, unix.SYS_KEYCTL, unix.SYS_REQUEST_KEY)},
	// The agent's view of files is the sandbox's boundary; bwrap built it
	// and the agent has no capabilities, so these fail anyway, but the
	// filesystem-context code behind them (fsconfig: CVE-2022-0185) stays
	// out of reach. Docker refuses them without CAP_SYS_ADMIN; Flatpak
	// refuses them (the new mount API with ENOSYS).
	{"mount", refuse(unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_CHROOT,
		unix.SYS_MOVE_MOUNT, unix.SYS_OPEN_TREE, unix.SYS_OPEN_TREE_ATTR, unix.SYS_FSOPEN,
		unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_FSPICK, unix.SYS_MOUNT_SETATTR)},
	// New namespaces give the agent capabilities over fresh kernel objects,
	// the start of many escalations; bwrap's --disable-userns stops user
	// namespaces, this stops every kind. clone3 keeps its flags behind a
	// pointer that a filter cannot read, so it fails with ENOSYS, on which
	// glibc falls back to clone. Docker refuses the same, with the same
	// clone mask and clone3 answer; Flatpak refuses unshare, setns, clone
	// with CLONE_NEWUSER, and clone3 with ENOSYS.
	{"namespaces", append(refuse(unix.SYS_UNSHARE, unix.SYS_SETNS),
		seccompRule{nr: unix.SYS_CLONE, errno: unix.EPERM, check: anyBit(0, cloneNewFlags)},
		seccompRule{nr: unix.SYS_CLONE3, errno: unix.ENOSYS, probed: true})},
	// Programs for the in-kernel verifier and JIT, a steady source of
	// escalations. Docker refuses it; Flatpak leaves it to the sysctl that
	// most distributions set (kernel.unprivileged_bpf_disabled).
	{"bpf", refuse(unix.SYS_BPF)},
	// Performance counters: many CVEs and side channels. lookup_dcookie
	// served oprofile. Docker refuses both; Flatpak refuses
	// perf_event_open outside --devel. Loosen it to profile in a lease.
	{"perf", refuse(unix.SYS_PERF_EVENT_OPEN, unix.SYS_LOOKUP_DCOOKIE)},
	// Lets a process stall the kernel in the middle of a copy, the usual
	// way to win an exploit's race. Docker refuses it; Flatpak does not.
	{"userfaultfd", refuse(unix.SYS_USERFAULTFD)},
	// io_uring's operations run in kernel workers that no seccomp filter
	// sees, and it has had many CVEs. Node's libuv and Tokio fall back to
	// epoll when setup fails. Docker refuses it since 25.0; Flatpak does not.
	{"io_uring", refuse(unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER)},
	// Loading kernel code. Docker refuses it; Flatpak leaves it to
	// CAP_SYS_MODULE, which the agent lacks too.
	{"modules", refuse(unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE)},
	// Booting another kernel. Docker refuses it; Flatpak leaves it to
	// CAP_SYS_BOOT.
	{"kexec", refuse(unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD)},
	// Opens a file by handle without walking a path, which is how the
	// Shocker exploit left Docker's containers; Docker refuses it without
	// CAP_DAC_READ_SEARCH, Flatpak does not. name_to_handle_at stays
	// allowed, as in Docker: it only names a file the caller can reach.
	{"open_by_handle", refuse(unix.SYS_OPEN_BY_HANDLE_AT)},
	// The kernel log shows kernel addresses and other tenants' messages.
	// Docker and Flatpak refuse it.
	{"syslog", refuse(unix.SYS_SYSLOG)},
	// The clock is the host's, never the sandbox's. Docker refuses setting
	// it but allows adjtimex and clock_adjtime, which read the clock's
	// state with modes 0; no agent's tools do. Flatpak allows them.
	{"clock", refuse(unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME, unix.SYS_CLOCK_ADJTIME, unix.SYS_ADJTIMEX)},
	// Running the host: process accounting, swap, reboot, disk quotas and
	// hanging up terminals. Docker refuses them; Flatpak refuses acct and
	// quotactl.
	{"admin", refuse(unix.SYS_ACCT, unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_REBOOT,
		unix.SYS_QUOTACTL, unix.SYS_QUOTACTL_FD, unix.SYS_VHANGUP)},
	// Raw x86 port I/O (none on arm64). Docker refuses it; Flatpak leaves
	// it to CAP_SYS_RAWIO.
	{"ioport", refuse(ioportSyscalls...)},
	// Other execution domains: ADDR_NO_RANDOMIZE turns off ASLR and
	// READ_IMPLIES_EXEC makes data executable, both exploit aids. Allowed
	// are the values Docker allows: PER_LINUX, PER_LINUX32, UNAME26, both,
	// and the query 0xffffffff (the kernel reads an unsigned int). gdb's
	// "disable-randomization" only warns. Flatpak allows PER_LINUX alone
	// outside --devel.
	{"personality", []seccompRule{{nr: unix.SYS_PERSONALITY, errno: unix.EPERM,
		check: noneOf(0, 0, 0x8, 0x20000, 0x20008, 0xffffffff)}}},
	// Long obsolete calls that only old exploits use (x86-64 only).
	// Docker refuses them; Flatpak refuses uselib.
	{"obsolete", refuse(obsoleteSyscalls...)},
	// Watches a whole filesystem or mount. Docker refuses it without
	// CAP_SYS_ADMIN; Flatpak does not.
	{"fanotify", refuse(unix.SYS_FANOTIFY_INIT)},
	// Types into a terminal's input (TIOCSTI; TIOCLINUX's paste on a
	// virtual console does the same): a terminal that outlives the agent
	// would run what it typed as the user (CVE-2017-5226 in bwrap). bwrap's
	// --new-session already keeps the user's terminal away. The kernel
	// truncates the request to an unsigned int, so only its low 32 bits
	// are compared. Flatpak refuses both; Docker allows them.
	{"tiocsti", []seccompRule{{nr: unix.SYS_IOCTL, errno: unix.EPERM,
		check: oneOf(1, unix.TIOCSTI, unix.TIOCLINUX)}}},
}

// cloneNewFlags are clone's namespace flags, the mask Docker uses.
// CLONE_NEWTIME is left out: in clone's flags its bit is part of the exit
// signal, and clone3 is refused whole.
const cloneNewFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// seccompEntry is one reason to refuse, named for policy.
type seccompEntry struct {
	name  string
	rules []seccompRule
}

// seccompRule refuses one system call with errno: every call, or only
// those whose argument matches check. A system call has at most one rule.
// A probed call is one that libc makes routinely to learn whether the
// kernel has it (glibc's clone3 before every thread and fork): refusing it
// is no attempt of the agent's, so it is never recorded.
type seccompRule struct {
	nr     uint32
	errno  unix.Errno
	check  *argCheck
	probed bool
}

// argCheck matches the low 32 bits of argument arg (every argument it
// reads is an int or unsigned int to the kernel): when any bit of mask is
// set, or when the value is (in) or is not (!in) one of values.
type argCheck struct {
	arg    int
	mask   uint32
	values []uint32
	in     bool
}

func refuse(nrs ...uint32) []seccompRule {
	var rules []seccompRule
	for _, nr := range nrs {
		rules = append(rules, seccompRule{nr: nr, errno: unix.EPERM})
	}
	return rules
}

func anyBit(arg int, mask uint32) *argCheck { return &argCheck{arg: arg, mask: mask} }

func oneOf(arg int, values ...uint32) *argCheck {
	return &argCheck{arg: arg, values: values, in: true}
}

func noneOf(arg int, values ...uint32) *argCheck { return &argCheck{arg: arg, values: values} }

// Offsets in struct seccomp_data; an argument's low half comes first on
// the little-endian architectures the filter is built for.
const (
	seccompNR   = 0
	seccompArch = 4
	seccompArgs = 16
)

// x32SyscallBit marks the x32 ABI's calls on x86-64; -1 also has it, and
// is what a tracer sets to skip a call.
const x32SyscallBit = 0x40000000

// CheckSeccompAllow reports a name that is not an entry of the sandbox's
// seccomp filter, listing the entries.
func CheckSeccompAllow(allow []string) error {
	var known []string
	for _, e := range seccompEntries {
		known = append(known, e.name)
	}
	for _, name := range allow {
		if !slices.Contains(known, name) {
			return fmt.Errorf("unknown seccomp entry %q (known: %s)", name, strings.Join(known, ", "))
		}
	}
	return nil
}

// seccompFilter returns the classic BPF program (struct sock_filter array,
// little-endian bytes as bwrap reads them from its --seccomp fd) that
// refuses every entry of seccompEntries except those named in allow. With
// notify, a refused call that is not probed goes to the filter's listener
// (SECCOMP_RET_USER_NOTIF), whose holder records it and answers the rule's
// errno (see recorder), and so do the write-class calls (see
// watchedCalls) and, with opens, the opens that ask to write (see
// watchedOpens); without notify, the kernel answers it. It fails on an
// unknown name, on an architecture it has no numbers for, and on a program
// that classic BPF cannot hold.
func seccompFilter(allow []string, notify, opens bool) ([]byte, error) {
	if err := CheckSeccompAllow(allow); err != nil {
		return nil, err
	}
	var arch uint32
	switch runtime.GOARCH {
	case "amd64":
		arch = unix.AUDIT_ARCH_X86_64
	case "arm64":
		arch = unix.AUDIT_ARCH_AARCH64
	default:
		return nil, fmt.Errorf("no seccomp filter for %s", runtime.GOARCH)
	}
	var p program
	p.load(seccompArch)
	p.jump(unix.BPF_JEQ, arch, 1, 0)
	p.ret(unix.SECCOMP_RET_KILL_PROCESS)
	p.load(seccompNR)
	if runtime.GOARCH == "amd64" {
		p.jump(unix.BPF_JGE, x32SyscallBit, 0, 2)
		p.jump(unix.BPF_JEQ, 0xffffffff, 1, 0)
		p.ret(unix.SECCOMP_RET_KILL_PROCESS)
	}
	for _, e := range seccompEntries {
		if slices.Contains(allow, e.name) {
			continue
		}
		for _, r := range e.rules {
			p.rule(r, notify && !r.probed)
		}
	}
	if notify {
		watched := watchedCalls
		if opens {
			watched = slices.Concat(watched, watchedOpens)
		}
		for _, w := range watched {
			p.rule(seccompRule{nr: w.nr, check: w.check}, true)
		}
	}
	p.ret(unix.SECCOMP_RET_ALLOW)
	if p.err == nil && len(p.insns) > unix.BPF_MAXINSNS {
		p.err = fmt.Errorf("%d instructions, more than BPF_MAXINSNS (%d)", len(p.insns), unix.BPF_MAXINSNS)
	}
	if p.err != nil {
		return nil, fmt.Errorf("seccomp filter: %w", p.err)
	}
	b := make([]byte, 0, 8*len(p.insns))
	for _, in := range p.insns {
		b = binary.LittleEndian.AppendUint16(b, in.Code)
		b = append(b, in.Jt, in.Jf)
		b = binary.LittleEndian.AppendUint32(b, in.K)
	}
	return b, nil
}

// program assembles classic BPF; the first error sticks.
type program struct {
	insns []unix.SockFilter
	err   error
}

func (p *program) load(offset uint32) {
	p.insns = append(p.insns, unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: offset})
}

func (p *program) ret(action uint32) {
	p.insns = append(p.insns, unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: action})
}

// jump adds a conditional jump; its offsets count instructions after the
// next one and must fit in a byte.
func (p *program) jump(op uint16, k uint32, jt, jf int) {
	if jt > 255 || jf > 255 {
		p.err = fmt.Errorf("jump of %d instructions does not fit classic BPF", max(jt, jf))
	}
	p.insns = append(p.insns, unix.SockFilter{Code: unix.BPF_JMP | op | unix.BPF_K, Jt: uint8(jt), Jf: uint8(jf), K: k})
}

// rule adds one block that leaves the syscall number in A for the next
// block when the number differs, and returns otherwise. A refusal of every
// call is two instructions; an argument check loads the argument, tests it
// and returns, so no jump spans more than its own block. A notified
// refusal goes to the listener instead of returning the errno.
func (p *program) rule(r seccompRule, notify bool) {
	refused := unix.SECCOMP_RET_ERRNO | uint32(r.errno)
	if notify {
		refused = unix.SECCOMP_RET_USER_NOTIF
	}
	c := r.check
	if c == nil {
		p.jump(unix.BPF_JEQ, r.nr, 0, 1)
		p.ret(refused)
		return
	}
	tests := len(c.values)
	if c.mask != 0 {
		tests = 1
	}
	p.jump(unix.BPF_JEQ, r.nr, 0, 1+tests+2)
	p.load(seccompArgs + 8*uint32(c.arg))
	// Each test jumps to the second return on a match; falling through
	// all of them reaches the first.
	if c.mask != 0 {
		p.jump(unix.BPF_JSET, c.mask, 1, 0)
	}
	for i, v := range c.values {
		p.jump(unix.BPF_JEQ, v, tests-i, 0)
	}
	onMatch, otherwise := refused, uint32(unix.SECCOMP_RET_ALLOW)
	if c.mask == 0 && !c.in {
		onMatch, otherwise = otherwise, onMatch
	}
	p.ret(otherwise)
	p.ret(onMatch)
}
