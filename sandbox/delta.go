package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// Layout says how a delta directory encodes the agent's changes.
type Layout int

const (
	// Full is a whole work tree: it replaces the base entirely. A .git
	// entry at its top is git's, not the agent's, and is skipped.
	Full Layout = iota
	// Overlay is an overlayfs upper directory: only what changed, with
	// whiteouts for deletions and opaque directories for replaced ones.
	Overlay
)

// Delta is where a provider left the agent's changes on the host.
type Delta struct {
	Root   string
	Layout Layout
	// Source, when set, holds the changes instead of a directory at Root
	// (then the file that holds them, such as an AgentFS database): Walk
	// and OpenEntry ask it.
	Source Source
}

// Source is a delta kept in a file of its own rather than as a directory.
type Source interface {
	// Walk visits the changes as Walk does a directory's.
	Walk(fn func(Entry) error) error
	// Open returns the content of a file entry that Walk listed, as a
	// readable, seekable file of e.Size bytes.
	Open(e Entry) (*os.File, error)
}

// Kind is what an entry of a delta is.
type Kind int

const (
	File     Kind = iota // a regular file
	Symlink              // a symbolic link (never followed)
	Dir                  // a directory (opaque: it replaces the base directory)
	Whiteout             // a deletion of the base path
	Special              // a device, FIFO or socket: never valid in a result
)

func (k Kind) String() string {
	return [...]string{"file", "symlink", "directory", "whiteout", "special file"}[k]
}

// Entry is one thing found in a delta, seen with lstat only.
type Entry struct {
	Path     string      // slash-separated, relative to the delta root
	HostPath string      // where it is on the host
	Kind     Kind        //
	Mode     fs.FileMode // as lstat reported it, including setuid bits
	Size     int64
	Opaque   bool   // for directories of an overlay
	Target   string // for symlinks
}

// Walk visits the delta's entries in lexical order, parents before
// children. It never follows a symlink and never opens anything: the caller
// opens files it decides to read with OpenEntry.
func Walk(d Delta, fn func(Entry) error) error {
	if d.Source != nil {
		return d.Source.Walk(fn)
	}
	return walkDir(d, d.Root, "", fn)
}

func walkDir(d Delta, dir, rel string, fn func(Entry) error) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		if rel == "" && name == ".git" && d.Layout == Full {
			continue
		}
		host := filepath.Join(dir, name)
		path := name
		if rel != "" {
			path = rel + "/" + name
		}
		var st unix.Stat_t
		if err := unix.Lstat(host, &st); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		e := Entry{Path: path, HostPath: host, Size: st.Size, Mode: FileMode(st.Mode)}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			e.Kind = File
		case unix.S_IFLNK:
			e.Kind = Symlink
			if e.Target, err = os.Readlink(host); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
		case unix.S_IFDIR:
			e.Kind = Dir
			e.Opaque = d.Layout == Overlay && isOpaque(host)
		case unix.S_IFCHR:
			e.Kind = Special
			if d.Layout == Overlay && st.Rdev == 0 {
				e.Kind = Whiteout
			}
		default:
			e.Kind = Special
		}
		if err := fn(e); err != nil {
			return err
		}
		if e.Kind == Dir {
			if err := walkDir(d, host, path, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// isOpaque reads overlayfs's opaque mark: user.overlay.opaque for mounts in a
// user namespace (userxattr), trusted.overlay.opaque for mounts by real root.
func isOpaque(path string) bool {
	buf := make([]byte, 8)
	for _, attr := range []string{"user.overlay.opaque", "trusted.overlay.opaque"} {
		n, err := unix.Lgetxattr(path, attr, buf)
		if err == nil && n == 1 && buf[0] == 'y' {
			return true
		}
	}
	return false
}

// FileMode converts a raw st_mode to an fs.FileMode that keeps the setuid,
// setgid and sticky bits and the file type.
func FileMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	if m&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	}
	return mode
}

// ErrChanged is returned when a file is not what Walk saw: it was replaced or
// resized after the walk.
var ErrChanged = errors.New("file changed after it was listed")

// OpenEntry opens a regular file entry of d for reading. It resolves the
// path beneath d.Root without following any symlink (openat2 with
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS), does not block on a FIFO, and checks
// that it is still the regular file of the size Walk saw.
func OpenEntry(d Delta, e Entry) (*os.File, error) {
	if e.Kind != File {
		return nil, fmt.Errorf("%s: not a regular file", e.Path)
	}
	if d.Source != nil {
		return d.Source.Open(e)
	}
	root, err := os.Open(d.Root)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	fd, err := unix.Openat2(int(root.Fd()), e.Path, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.Path, err)
	}
	f := os.NewFile(uintptr(fd), e.HostPath)
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() != e.Size {
		f.Close()
		return nil, fmt.Errorf("%s: %w", e.Path, ErrChanged)
	}
	return f, nil
}

// CleanRel reports whether p is a clean relative slash path with no empty,
// "." or ".." component.
func CleanRel(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") {
		return false
	}
	for _, c := range strings.Split(p, "/") {
		if c == "" || c == "." || c == ".." {
			return false
		}
	}
	return true
}
