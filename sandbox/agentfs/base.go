package agentfs

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"

	sdk "github.com/tursodatabase/agentfs/sdk/go"

	"golang.org/x/sys/unix"

	"github.com/git-lease/git-lease/sandbox"
)

// baseEntry is what the exported base holds at a path.
type baseEntry struct {
	exists bool
	kind   sandbox.Kind
	mode   fs.FileMode
	size   int64
	target string
}

// beneath resolves a path inside the base without following any symlink.
var beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// lookupBase lstats p in the base, never following a symlink: a path whose
// leading part is a symlink or a non-directory is not in the base.
func lookupBase(base *os.File, p string) baseEntry {
	fd, err := unix.Openat2(int(base.Fd()), p, &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: uint64(beneath)})
	if err != nil {
		return baseEntry{}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return baseEntry{}
	}
	b := baseEntry{exists: true, kind: kindOf(st.Mode), mode: sandbox.FileMode(st.Mode), size: st.Size}
	if b.kind == sandbox.Symlink {
		buf := make([]byte, 4096)
		n, err := unix.Readlinkat(fd, "", buf)
		if err != nil {
			return baseEntry{}
		}
		b.target = string(buf[:n])
	}
	return b
}

// sameAsBase reports whether a delta entry is only a copy-up of the base's
// entry b at its path: same type, mode, symlink target and bytes.
func (s *Source) sameAsBase(n node, b baseEntry, base *os.File) (bool, error) {
	if n.Kind != b.kind || n.Mode != b.mode || n.Size != b.size || n.Target != b.target {
		return false, nil
	}
	if n.Kind != sandbox.File {
		return true, nil
	}
	fd, err := unix.Openat2(int(base.Fd()), n.Path, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC, Resolve: uint64(beneath)})
	if err != nil {
		return false, nil
	}
	ours := os.NewFile(uintptr(fd), n.Path)
	defer ours.Close()
	theirs, err := s.content(n)
	if err != nil {
		return false, err
	}
	defer theirs.Close()
	return sameBytes(ours, theirs)
}

func sameBytes(a, b io.Reader) (bool, error) {
	bufA, bufB := make([]byte, 64<<10), make([]byte, 64<<10)
	for {
		na, errA := io.ReadFull(a, bufA)
		nb, errB := io.ReadFull(b, bufB)
		if !bytes.Equal(bufA[:na], bufB[:nb]) {
			return false, nil
		}
		if errA == io.EOF || errA == io.ErrUnexpectedEOF {
			return errB == io.EOF || errB == io.ErrUnexpectedEOF, nil
		}
		if errA != nil {
			return false, errA
		}
		if errB != nil {
			return false, errB
		}
	}
}

// hostBase is the exported base directory as the AgentFS SDK's read-only
// lower layer (agentfs.BaseFS). Its inodes are numbered as paths are first
// seen, the root being 1 as in every AgentFS layer; nothing is followed
// out of the directory.
type hostBase struct {
	root *os.File
	mu   sync.Mutex
	ino  map[string]int64 // path ("" for the root) -> inode
	path map[int64]string
}

func newHostBase(dir string) (*hostBase, error) {
	root, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	return &hostBase{root: root, ino: map[string]int64{"": rootIno}, path: map[int64]string{rootIno: ""}}, nil
}

func (b *hostBase) Close() error { return b.root.Close() }

func (b *hostBase) pathOf(ino int64) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, ok := b.path[ino]
	if !ok {
		return "", sdk.ErrNoent("base", strconv.FormatInt(ino, 10))
	}
	return p, nil
}

func (b *hostBase) inoOf(p string) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	ino, ok := b.ino[p]
	if !ok {
		ino = int64(len(b.ino) + 1)
		b.ino[p], b.path[ino] = ino, p
	}
	return ino
}

// open opens p in the base without following a symlink (O_PATH: for stat).
func (b *hostBase) open(p string, flags int) (int, error) {
	if p == "" {
		p = "."
	}
	return unix.Openat2(int(b.root.Fd()), p, &unix.OpenHow{Flags: uint64(flags | unix.O_NOFOLLOW | unix.O_CLOEXEC), Resolve: uint64(beneath)})
}

func (b *hostBase) stat(p string) (*sdk.Stats, error) {
	fd, err := b.open(p, unix.O_PATH)
	if err != nil {
		return nil, sdk.ErrNoent("base", p)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	return &sdk.Stats{Ino: b.inoOf(p), Mode: int64(st.Mode), Nlink: 1, Size: st.Size,
		Atime: st.Mtim.Sec, Mtime: st.Mtim.Sec, Ctime: st.Mtim.Sec, MtimeNsec: st.Mtim.Nsec}, nil
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

func (b *hostBase) Stat(ctx context.Context, ino int64) (*sdk.Stats, error) {
	p, err := b.pathOf(ino)
	if err != nil {
		return nil, err
	}
	return b.stat(p)
}

func (b *hostBase) Lookup(ctx context.Context, parent int64, name string) (*sdk.Stats, error) {
	p, err := b.pathOf(parent)
	if err != nil {
		return nil, err
	}
	if strings.Contains(name, "/") || name == "." || name == ".." {
		return nil, sdk.ErrNoent("base", name)
	}
	return b.stat(join(p, name))
}

func (b *hostBase) Readdir(ctx context.Context, ino int64) ([]string, error) {
	p, err := b.pathOf(ino)
	if err != nil {
		return nil, err
	}
	fd, err := b.open(p, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil, sdk.ErrNoent("base", p)
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	sort.Strings(names)
	return names, err
}

func (b *hostBase) ReaddirPlus(ctx context.Context, ino int64) ([]sdk.DirEntry, error) {
	names, err := b.Readdir(ctx, ino)
	if err != nil {
		return nil, err
	}
	out := make([]sdk.DirEntry, 0, len(names))
	for _, name := range names {
		st, err := b.Lookup(ctx, ino, name)
		if err != nil {
			return nil, err
		}
		out = append(out, sdk.DirEntry{Name: name, Stats: st})
	}
	return out, nil
}

func (b *hostBase) ReadFile(ctx context.Context, ino int64) ([]byte, error) {
	p, err := b.pathOf(ino)
	if err != nil {
		return nil, err
	}
	fd, err := b.open(p, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return nil, sdk.ErrNoent("base", p)
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	return io.ReadAll(f)
}

func (b *hostBase) Readlink(ctx context.Context, ino int64) (string, error) {
	p, err := b.pathOf(ino)
	if err != nil {
		return "", err
	}
	fd, err := b.open(p, unix.O_PATH)
	if err != nil {
		return "", sdk.ErrNoent("base", p)
	}
	defer unix.Close(fd)
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(fd, "", buf)
	return string(buf[:n]), err
}
