package bwrap

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// The lease's own files (its prompt, the agent's state file, credential
// files) are not bound from their host paths, which the sandbox's mount
// table would show (a bind's source is printed in /proc/self/mountinfo):
// the init writes them onto a small tmpfs of their own, read-only ones with
// their content, writable ones empty, and the host reads the writable ones
// there (sandbox.SharedFiles). The tmpfs bounds how much the agent can put
// in them.
const (
	stageFiles   = "files"
	maxBindBytes = 1 << 20 // a prompt or a credential file; more is refused
	sharedSlack  = 1 << 20 // what writable files may grow to, together
)

// readBind is the content of a read-only file the lease hands its agent.
func readBind(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxBindBytes+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxBindBytes {
		return "", fmt.Errorf("%s is larger than %d bytes, too large to hand to the sandbox", filepath.Base(path), maxBindBytes)
	}
	return string(b), nil
}

// filesOptions are the mount options of the files' tmpfs.
func filesOptions(files map[string]sandboxFile) string {
	size := sharedSlack
	for _, f := range files {
		size += len(f.Content)
	}
	return fmt.Sprintf("mode=0755,size=%d,nr_inodes=%d", size, len(files)+16)
}

// sandboxFile is one of the lease's files on the files tmpfs.
type sandboxFile struct {
	Content  string
	Writable bool
}

// writeFiles is the init's side: the tmpfs, and each file on it.
func writeFiles(files map[string]sandboxFile) error {
	dir := filepath.Join(stageDir, stageFiles)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, filesOptions(files)); err != nil {
		return fmt.Errorf("mount the lease's files: %w", err)
	}
	for name, f := range files {
		mode := os.FileMode(0o400)
		if f.Writable {
			mode = 0o600
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(f.Content), mode); err != nil {
			return err
		}
	}
	return nil
}

// sharedFiles is the host's view of the writable files: read through the
// files tmpfs while the sandbox runs, and from what was last read once it
// has ended (its mounts go with it).
type sharedFiles struct {
	names map[string]string // sandbox path -> name on the tmpfs

	mu    sync.Mutex
	dir   int               // the files tmpfs, opened through bwrap's mounts (-1: not open)
	final map[string][]byte // the files as the sandbox left them
}

// open opens the files tmpfs through the mount namespace of pid (bwrap,
// which stays in the init's).
func (s *sharedFiles) open(pid int) {
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/root"+filepath.Join(stageDir, stageFiles), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dir = -1
	if err == nil {
		s.dir = fd
	}
}

// ReadShared reads at most max bytes of the regular file the lease shares
// writable at sandboxPath (sandbox.SharedFiles).
func (s *sharedFiles) ReadShared(sandboxPath string, max int) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.final != nil {
		b := s.final[sandboxPath]
		return b[:min(len(b), max)]
	}
	return s.read(sandboxPath, max)
}

// read reads a file through the open tmpfs, never through a link or a
// FIFO: the agent writes these files.
func (s *sharedFiles) read(sandboxPath string, max int) []byte {
	name, ok := s.names[sandboxPath]
	if !ok || s.dir < 0 {
		return nil
	}
	fd, err := unix.Openat(s.dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(f, int64(max)))
	return b
}

// finish keeps the files as the sandbox left them and closes the tmpfs.
func (s *sharedFiles) finish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.final != nil {
		return
	}
	s.final = map[string][]byte{}
	for p := range s.names {
		s.final[p] = s.read(p, sharedSlack)
	}
	if s.dir >= 0 {
		unix.Close(s.dir)
		s.dir = -1
	}
}
