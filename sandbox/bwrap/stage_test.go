package bwrap

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/git-lease/git-lease/sandbox"
)

// BenchmarkDetachStages measures what the root path adds to a start: a
// detached copy of each staged mount, the base's idmapped, for a sandbox
// of the usual shape (base, lease directory, two shared paths).
func BenchmarkDetachStages(b *testing.B) {
	if os.Getuid() != 0 {
		b.Skip("only root detaches mounts")
	}
	dir := b.TempDir()
	var stages []stage
	for _, name := range []string{"lower0", stageLease, "bind2", "bind3"} {
		p := filepath.Join(dir, name)
		if err := os.Mkdir(p, 0o755); err != nil {
			b.Fatal(err)
		}
		stages = append(stages, stage{Name: name, Host: p, Dir: true, Lower: name == "lower0"})
	}
	// A process in a user namespace of its own, as the sandbox's init is.
	held := exec.Command("sleep", "60")
	held.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: LeaseUIDBase, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: LeaseUIDBase, Size: 1}},
	}
	if err := held.Start(); err != nil {
		b.Skipf("no user namespace: %v", err)
	}
	defer held.Process.Kill()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fds, err := detach(stages, held.Process.Pid)
		if err != nil {
			b.Fatal(err)
		}
		closeAll(fds)
	}
}

// A uid claimed by a lease whose directory is gone (its repository was
// deleted without cleanup) is taken again, so that claims cannot run out;
// a live lease keeps its own.
func TestStaleUIDClaimsAreTakenAgain(t *testing.T) {
	uidClaims = t.TempDir()
	live := sandbox.Spec{Dir: t.TempDir()}
	uid, err := claimUID(live)
	if err != nil {
		t.Fatal(err)
	}
	next := sandbox.Spec{Dir: t.TempDir()}
	slot := LeaseUIDBase + int(firstSlot(next.Dir))
	stale := filepath.Join(uidClaims, strconv.Itoa(slot))
	if err := os.WriteFile(stale, []byte(filepath.Join(t.TempDir(), "removed-lease")), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := claimUID(next); err != nil || got != slot {
		t.Fatalf("the stale claim on %d was not taken again: %d, %v", slot, got, err)
	}
	if again, err := claimUID(live); err != nil || again != uid {
		t.Fatalf("a live lease's uid moved from %d to %d (%v)", uid, again, err)
	}
	// A live lease's claim is never stale, even for a lease searching
	// from its slot.
	if err := os.Remove(filepath.Join(next.Dir, "uid")); err != nil {
		t.Fatal(err)
	}
	third := sandbox.Spec{Dir: t.TempDir()}
	for _, s := range []sandbox.Spec{next, third} {
		if got, _ := claimUID(s); got == uid {
			t.Fatalf("the live lease's uid %d was given to %s", uid, s.Dir)
		}
	}
	if err := releaseUID(live); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(uidClaims, strconv.Itoa(uid))); !os.IsNotExist(err) {
		t.Fatalf("the released claim is still there: %v", err)
	}
}

// BenchmarkCopySelf measures what a lease with a network adds to its start
// by copying the git-lease binary (here, the test binary) onto a tmpfs.
func BenchmarkCopySelf(b *testing.B) {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(self)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil {
		b.SetBytes(st.Size())
	}
	dir, err := os.MkdirTemp("/dev/shm", "copy-self-")
	if err != nil {
		b.Skip("no tmpfs at /dev/shm")
	}
	defer os.RemoveAll(dir)
	for i := 0; i < b.N; i++ {
		dst := filepath.Join(dir, strconv.Itoa(i))
		if err := copySelf(dst, int(f.Fd())); err != nil {
			b.Fatal(err)
		}
		os.Remove(dst)
	}
}
