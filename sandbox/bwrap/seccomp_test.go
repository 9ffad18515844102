package bwrap

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// seccompCall is the struct seccomp_data that the kernel gives a filter.
type seccompCall struct {
	nr   uint32
	arch uint32
	args [6]uint64
}

// runFilter runs a classic BPF program as the kernel would on call, with
// only the instructions seccompFilter emits, and refuses anything a kernel
// would reject (an unknown opcode, a jump or load out of bounds, a program
// that can end without returning).
func runFilter(prog []byte, call seccompCall) (uint32, error) {
	data := make([]byte, 64)
	binary.LittleEndian.PutUint32(data[seccompNR:], call.nr)
	binary.LittleEndian.PutUint32(data[seccompArch:], call.arch)
	for i, a := range call.args {
		binary.LittleEndian.PutUint64(data[seccompArgs+8*i:], a)
	}
	var acc uint32
	for pc := 0; pc < len(prog)/8; pc++ {
		in := prog[8*pc:]
		code, jt, jf, k := binary.LittleEndian.Uint16(in), int(in[2]), int(in[3]), binary.LittleEndian.Uint32(in[4:])
		var taken bool
		switch code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			if k%4 != 0 || k > 60 {
				return 0, fmt.Errorf("instruction %d loads offset %d", pc, k)
			}
			acc = binary.LittleEndian.Uint32(data[k:])
			continue
		case unix.BPF_RET | unix.BPF_K:
			return k, nil
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K:
			taken = acc == k
		case unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K:
			taken = acc >= k
		case unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			taken = acc&k != 0
		default:
			return 0, fmt.Errorf("instruction %d has opcode %#x", pc, code)
		}
		if taken {
			pc += jt
		} else {
			pc += jf
		}
		if pc+1 >= len(prog)/8 {
			return 0, fmt.Errorf("instruction %d jumps out of the program", pc)
		}
	}
	return 0, fmt.Errorf("the program ends without returning")
}

func nativeArch(t testing.TB) uint32 {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64
	}
	t.Skipf("no seccomp filter for %s", runtime.GOARCH)
	return 0
}

const (
	allow  = unix.SECCOMP_RET_ALLOW
	kill   = unix.SECCOMP_RET_KILL_PROCESS
	eperm  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	enosys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
)

func TestSeccompFilterStructure(t *testing.T) {
	arch := nativeArch(t)
	prog, err := seccompFilter(nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	n := len(prog) / 8
	if len(prog)%8 != 0 || n >= unix.BPF_MAXINSNS || n > 200 {
		t.Fatalf("%d bytes, %d instructions: want whole instructions, far fewer than %d", len(prog), n, unix.BPF_MAXINSNS)
	}
	insn := func(i int) (uint16, uint32) {
		return binary.LittleEndian.Uint16(prog[8*i:]), binary.LittleEndian.Uint32(prog[8*i+4:])
	}
	// The arch is checked before anything reads a syscall number.
	for i, want := range []struct {
		code uint16
		k    uint32
	}{
		{unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, seccompArch},
		{unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, arch},
		{unix.BPF_RET | unix.BPF_K, kill},
		{unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, seccompNR},
	} {
		if code, k := insn(i); code != want.code || k != want.k {
			t.Errorf("instruction %d is %#x %#x, want %#x %#x", i, code, k, want.code, want.k)
		}
	}
	if code, k := insn(n - 1); code != unix.BPF_RET|unix.BPF_K || k != allow {
		t.Errorf("last instruction is %#x %#x, want ret ALLOW", code, k)
	}
	t.Logf("%d instructions", n)
}

// TestSeccompFilterDecisions runs the program on calls whose answer is
// known from the kernel's side, not from the table.
func TestSeccompFilterDecisions(t *testing.T) {
	arch := nativeArch(t)
	prog, err := seccompFilter(nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	call := func(nr uint32, args ...uint64) seccompCall {
		c := seccompCall{nr: nr, arch: arch}
		copy(c.args[:], args)
		return c
	}
	cases := []struct {
		name string
		call seccompCall
		want uint32
	}{
		{"read", call(unix.SYS_READ), allow},
		{"ptrace", call(unix.SYS_PTRACE), allow},
		{"name_to_handle_at", call(unix.SYS_NAME_TO_HANDLE_AT), allow},
		{"keyctl", call(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING), eperm},
		{"mount", call(unix.SYS_MOUNT), eperm},
		{"fsconfig", call(unix.SYS_FSCONFIG), eperm},
		{"unshare", call(unix.SYS_UNSHARE, unix.CLONE_NEWUSER), eperm},
		{"clone a process", call(unix.SYS_CLONE, uint64(unix.SIGCHLD)), allow},
		{"clone a thread", call(unix.SYS_CLONE, unix.CLONE_VM|unix.CLONE_FS|unix.CLONE_FILES|unix.CLONE_SIGHAND|unix.CLONE_THREAD), allow},
		{"clone a user namespace", call(unix.SYS_CLONE, unix.CLONE_NEWUSER|uint64(unix.SIGCHLD)), eperm},
		{"clone a network namespace", call(unix.SYS_CLONE, unix.CLONE_NEWNET), eperm},
		{"clone a mount namespace", call(unix.SYS_CLONE, unix.CLONE_NEWNS), eperm},
		{"clone with high bits the kernel drops", call(unix.SYS_CLONE, 0x10000000<<32|uint64(unix.SIGCHLD)), allow},
		{"clone3", call(unix.SYS_CLONE3), enosys},
		{"bpf", call(unix.SYS_BPF), eperm},
		{"perf_event_open", call(unix.SYS_PERF_EVENT_OPEN), eperm},
		{"userfaultfd", call(unix.SYS_USERFAULTFD), eperm},
		{"io_uring_setup", call(unix.SYS_IO_URING_SETUP), eperm},
		{"open_by_handle_at", call(unix.SYS_OPEN_BY_HANDLE_AT), eperm},
		{"personality query", call(unix.SYS_PERSONALITY, 0xffffffff), allow},
		{"personality PER_LINUX32", call(unix.SYS_PERSONALITY, 0x8), allow},
		{"personality ADDR_NO_RANDOMIZE", call(unix.SYS_PERSONALITY, 0x0040000), eperm},
		{"personality READ_IMPLIES_EXEC", call(unix.SYS_PERSONALITY, 0x0400000), eperm},
		{"ioctl TCGETS", call(unix.SYS_IOCTL, 0, unix.TCGETS), allow},
		{"ioctl TIOCSTI", call(unix.SYS_IOCTL, 0, unix.TIOCSTI), eperm},
		{"ioctl TIOCSTI with high bits", call(unix.SYS_IOCTL, 0, 1<<32|unix.TIOCSTI), eperm},
		{"ioctl TIOCLINUX", call(unix.SYS_IOCTL, 0, unix.TIOCLINUX), eperm},
		{"a tracer's skipped call", call(0xffffffff), allow},
		{"another arch", seccompCall{nr: unix.SYS_READ, arch: unix.AUDIT_ARCH_I386}, kill},
		{"another arch's keyctl", seccompCall{nr: unix.SYS_KEYCTL, arch: unix.AUDIT_ARCH_ARM}, kill},
	}
	if runtime.GOARCH == "amd64" {
		cases = append(cases, struct {
			name string
			call seccompCall
			want uint32
		}{"x32 getpid", call(x32SyscallBit | unix.SYS_GETPID), kill})
	}
	for _, tc := range cases {
		got, err := runFilter(prog, tc.call)
		if err != nil || got != tc.want {
			t.Errorf("%s: %#x %v, want %#x", tc.name, got, err, tc.want)
		}
	}
}

// TestSeccompFilterRefusesEveryEntry checks every syscall number: refused
// with its entry's errno when some entry names it without an argument
// check, allowed when none names it, and allowed when policy lets its
// entry through.
func TestSeccompFilterRefusesEveryEntry(t *testing.T) {
	arch := nativeArch(t)
	seen := map[uint32]string{}
	for _, e := range seccompEntries {
		if len(e.rules) == 0 && (e.name != "ioport" && e.name != "obsolete" || runtime.GOARCH == "amd64") {
			t.Errorf("entry %s refuses nothing", e.name)
		}
		for _, r := range e.rules {
			if other, dup := seen[r.nr]; dup {
				t.Errorf("syscall %d is in %s and %s: the first rule's return would hide the second", r.nr, other, e.name)
			}
			seen[r.nr] = e.name
		}
	}
	for _, e := range seccompEntries {
		full, err := seccompFilter(nil, false, false)
		if err != nil {
			t.Fatal(err)
		}
		loosened, err := seccompFilter([]string{e.name}, false, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range e.rules {
			if r.check != nil {
				continue // TestSeccompFilterDecisions tries their arguments
			}
			want := unix.SECCOMP_RET_ERRNO | uint32(r.errno)
			if got, err := runFilter(full, seccompCall{nr: r.nr, arch: arch}); err != nil || got != want {
				t.Errorf("%s: syscall %d gives %#x %v, want %#x", e.name, r.nr, got, err, want)
			}
			if got, err := runFilter(loosened, seccompCall{nr: r.nr, arch: arch}); err != nil || got != allow {
				t.Errorf("%s allowed: syscall %d gives %#x %v, want ALLOW", e.name, r.nr, got, err)
			}
		}
	}
	prog, _ := seccompFilter(nil, false, false)
	for nr := uint32(0); nr < 1024; nr++ {
		if _, refused := seen[nr]; refused {
			continue
		}
		if got, err := runFilter(prog, seccompCall{nr: nr, arch: arch}); err != nil || got != allow {
			t.Errorf("syscall %d is in no entry but gives %#x %v", nr, got, err)
		}
	}
}

func TestSeccompFilterUnknownNameListsTheKnown(t *testing.T) {
	_, err := seccompFilter([]string{"keyring", "ptrace"}, false, false)
	if err == nil || !strings.Contains(err.Error(), `"ptrace"`) || !strings.Contains(err.Error(), "keyring, mount, namespaces") {
		t.Fatalf("got %v", err)
	}
	if err := CheckSeccompAllow([]string{"io_uring", "tiocsti"}); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkSeccompFilter measures building the program, which every
// sandboxed lease start does.
func BenchmarkSeccompFilter(b *testing.B) {
	nativeArch(b)
	for b.Loop() {
		if _, err := seccompFilter([]string{"perf"}, false, false); err != nil {
			b.Fatal(err)
		}
	}
}
