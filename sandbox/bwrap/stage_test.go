package bwrap

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
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
	for _, name := range []string{stageLower, stageLease, "bind2", "bind3"} {
		p := filepath.Join(dir, name)
		if err := os.Mkdir(p, 0o755); err != nil {
			b.Fatal(err)
		}
		stages = append(stages, stage{Name: name, Host: p, Dir: true})
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
