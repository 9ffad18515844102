package bwrap

import (
	"testing"

	"golang.org/x/sys/unix"
)

// The recording filter sends the recorder exactly what the errno filter
// refuses (but glibc's clone3 probe), and the write-class calls, opens
// only when they ask to write; the recorder finds the same rule for each,
// and so the same errno.
func TestRecordingFilterNotifiesWhatTheFilterRefuses(t *testing.T) {
	arch := nativeArch(t)
	refusing, err := seccompFilter(nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	recording, err := seccompFilter(nil, true, true)
	if err != nil {
		t.Fatal(err)
	}
	calls := []seccompCall{
		{nr: unix.SYS_CLONE, args: [6]uint64{unix.CLONE_NEWUSER | uint64(unix.SIGCHLD)}},
		{nr: unix.SYS_CLONE, args: [6]uint64{uint64(unix.SIGCHLD)}},
		{nr: unix.SYS_IOCTL, args: [6]uint64{0, unix.TIOCSTI}},
		{nr: unix.SYS_IOCTL, args: [6]uint64{0, unix.TCGETS}},
		{nr: unix.SYS_PERSONALITY, args: [6]uint64{0x0040000}},
		{nr: unix.SYS_PERSONALITY, args: [6]uint64{0xffffffff}},
		{nr: unix.SYS_OPENAT, args: [6]uint64{0, 0, unix.O_WRONLY | unix.O_CREAT}},
		{nr: unix.SYS_OPENAT, args: [6]uint64{0, 0, unix.O_RDONLY | unix.O_CLOEXEC | unix.O_DIRECTORY}},
		{nr: unix.SYS_OPENAT, args: [6]uint64{0, 0, 1<<32 | unix.O_RDWR}},
		{nr: unix.SYS_OPENAT, args: [6]uint64{0, 0, unix.O_RDONLY | unix.O_TRUNC}},
	}
	for nr := uint32(0); nr < 500; nr++ {
		calls = append(calls, seccompCall{nr: nr})
	}
	for _, c := range calls {
		c.arch = arch
		refused, err1 := runFilter(refusing, c)
		recorded, err2 := runFilter(recording, c)
		if err1 != nil || err2 != nil {
			t.Fatalf("syscall %d: %v %v", c.nr, err1, err2)
		}
		w, watched := findWatched(c.nr)
		watched = watched && (w.check == nil || w.check.matches(uint32(c.args[w.check.arg])))
		entry, rule, found := refusal(c.nr, c.args)
		switch {
		case c.nr == unix.SYS_CLONE3:
			if recorded != enosys {
				t.Errorf("clone3: %#x, want ENOSYS unrecorded", recorded)
			}
		case refused != allow:
			if recorded != unix.SECCOMP_RET_USER_NOTIF || !found || unix.SECCOMP_RET_ERRNO|uint32(rule.errno) != refused {
				t.Errorf("syscall %d %v: refused %#x, recorded %#x, recorder finds %s %v", c.nr, c.args, refused, recorded, entry, found)
			}
		case watched:
			if recorded != unix.SECCOMP_RET_USER_NOTIF {
				t.Errorf("write-class syscall %d: %#x, want a notification", c.nr, recorded)
			}
		case recorded != allow || found:
			t.Errorf("syscall %d %v: recorded %#x (recorder finds %s), want it allowed", c.nr, c.args, recorded, entry)
		}
	}
}

func TestDescribeCall(t *testing.T) {
	for _, c := range []struct {
		nr   uint32
		args [6]uint64
		want string
	}{
		{unix.SYS_UNSHARE, [6]uint64{unix.CLONE_NEWUSER | unix.CLONE_NEWNS}, "unshare(CLONE_NEWNS|CLONE_NEWUSER)"},
		{unix.SYS_CLONE, [6]uint64{unix.CLONE_NEWNET | 0x80 | uint64(unix.SIGCHLD)}, "clone(CLONE_NEWNET)"}, // 0x80 is part of the exit signal
		{unix.SYS_SETNS, [6]uint64{3, 0}, "setns(0x0)"},
		{unix.SYS_IOCTL, [6]uint64{0, 1<<32 | unix.TIOCSTI}, "ioctl(TIOCSTI)"},
		{unix.SYS_PERSONALITY, [6]uint64{0x0400000}, "personality(0x400000)"},
		{unix.SYS_KEYCTL, [6]uint64{unix.KEYCTL_JOIN_SESSION_KEYRING}, "keyctl(1)"},
		{unix.SYS_MOUNT, [6]uint64{}, "mount"},
	} {
		if got := describeCall(c.nr, c.args); got != c.want {
			t.Errorf("describeCall(%d, %v) = %q, want %q", c.nr, c.args, got, c.want)
		}
	}
}

func TestOutsideTheAgentsPlaces(t *testing.T) {
	shared := map[string]string{"/run/lease/state": "file0"}
	for p, want := range map[string]bool{
		"/work": false, "/work/a/b": false, "/tmp/x": false, "/home/agent/.cache": false, "/dev/shm/s": false,
		"/dev/null": false, "/proc/self/fd/1": false, "/proc/42/attr/current": false, "/run/lease/state": false,
		"/etc/passwd": true, "/workspace": true, "/home": true, "/usr/bin/x": true, "/dev/sda": true,
		"/proc/sys/kernel/x": true, "/run/lease/prompt": true, "/": true,
	} {
		if got := outside(p, shared); got != want {
			t.Errorf("outside(%q) = %v, want %v", p, got, want)
		}
	}
}
