package agentfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/hanwen/go-fuse/v2/fuse/nodefs"
	"github.com/hanwen/go-fuse/v2/fuse/pathfs"
	sdk "github.com/tursodatabase/agentfs/sdk/go"
	"golang.org/x/sys/unix"

	"github.com/git-lease/git-lease/sandbox"
)

// server is the agent's /work: the AgentFS Go SDK's OverlayFS, with the
// exported base as its read-only lower layer and the lease's database as
// its only writable one, served over FUSE by go-fuse's path API. One lock
// serializes every operation (the SDK's overlay is not transactional).
// Writes fail with ENOSPC once the database holds limit bytes.
//
// The SDK runs each of its statements on its own, a transaction each;
// the server groups the operations of up to commitEvery (or batchOps of
// them) into one transaction around the SDK's statements (its single
// connection runs them all), and commits it on fsync and before the
// database is closed for collection. A commit that fails has lost writes
// already acknowledged: every later operation fails, and so does stop.
type server struct {
	pathfs.FileSystem // ENOSYS for what is not below (xattrs)
	mu                sync.Mutex
	afs               *sdk.AgentFS
	ofs               *sdk.OverlayFS
	base              *hostBase
	db                string
	limit             int64
	inTx              bool        // a batch's transaction is open
	ops               int         // operations in it
	timer             *time.Timer // commits it commitEvery after it began
	lost              error       // a commit failed
}

// A batch's bounds: what a crash of the host can lose of what the agent
// did not fsync, and how much one transaction holds.
const (
	commitEvery = 200 * time.Millisecond
	batchOps    = 4096
)

// op runs one operation under the lock, in the open batch or a new one,
// committing the batch once it is full.
func (s *server) op(fn func(ctx context.Context) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lost != nil {
		return s.lost
	}
	if !s.inTx {
		if _, err := s.afs.DB().Exec(`BEGIN`); err != nil {
			return err
		}
		s.inTx = true
		s.timer = time.AfterFunc(commitEvery, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.commit()
		})
	}
	err := fn(context.Background())
	if s.ops++; s.ops >= batchOps {
		if err := s.commit(); err != nil {
			return err
		}
	}
	return err
}

// commit ends the open batch, if any, under the lock.
func (s *server) commit() error {
	if !s.inTx || s.lost != nil {
		return s.lost
	}
	s.inTx, s.ops = false, 0
	s.timer.Stop()
	if _, err := s.afs.DB().Exec(`COMMIT`); err != nil {
		s.lost = fmt.Errorf("commit the AgentFS database: %w", err)
	}
	return s.lost
}

// mount serves the overlay of base and the database db at mnt, its files
// owned by uid and gid, until the returned stop unmounts it and closes the
// database (checkpointing its WAL into it). mnt must be an empty directory
// only root can reach.
func mount(mnt, db, base string, limit int64, uid, gid int) (stop func() error, err error) {
	ctx := context.Background()
	afs, err := sdk.Open(ctx, sdk.AgentFSOptions{Path: db, Pool: sdk.PoolOptions{MaxOpenConns: 1}})
	if err != nil {
		return nil, err
	}
	// Each commit of a batch reaches the disk (an fsync commits one).
	if _, err := afs.DB().Exec(`PRAGMA synchronous=FULL`); err != nil {
		afs.Close()
		return nil, err
	}
	hb, err := newHostBase(base)
	if err != nil {
		afs.Close()
		return nil, err
	}
	s := &server{FileSystem: pathfs.NewDefaultFileSystem(), afs: afs, base: hb, db: db, limit: limit}
	s.ofs = sdk.NewOverlayFS(hb, afs.FS, afs.DB())
	closeAll := func() error { hb.Close(); return afs.Close() }
	if err := s.ofs.Init(ctx); err != nil {
		closeAll()
		return nil, err
	}
	opts := nodefs.NewOptions()
	opts.Owner = &fuse.Owner{Uid: uint32(uid), Gid: uint32(gid)}
	// Every change reaches the database through this mount, so the
	// kernel's cache of names, misses and attributes stays true: it need
	// not ask again.
	opts.EntryTimeout, opts.AttrTimeout, opts.NegativeTimeout = time.Hour, time.Hour, time.Hour
	// ClientInodes: the SDK's inode numbers, which hard links share.
	conn := nodefs.NewFileSystemConnector(pathfs.NewPathNodeFs(s, &pathfs.PathNodeFsOptions{ClientInodes: true}).Root(), opts)
	srv, err := fuse.NewServer(conn.RawFS(), mnt, &fuse.MountOptions{
		// The sandbox's processes are not root's: allow_other lets them
		// in, and default_permissions has the kernel check modes.
		AllowOther: true, Options: []string{"default_permissions"},
		FsName: "agentfs", Name: "agentfs", MaxWrite: 1 << 20,
		DirectMount: true, DirectMountStrict: true, // root mounts it itself: no fusermount
	})
	if err != nil {
		closeAll()
		return nil, err
	}
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		srv.Unmount()
		closeAll()
		return nil, err
	}
	var once sync.Once
	var stopErr error
	return func() error {
		once.Do(func() {
			if err := srv.Unmount(); err != nil {
				// A process still holds it (one the sandbox left):
				// detach it, so that no one reaches the database again.
				unix.Unmount(mnt, unix.MNT_DETACH)
			}
			srv.Wait()
			s.mu.Lock()
			commitErr := s.commit()
			s.mu.Unlock()
			stopErr = errors.Join(commitErr, closeAll())
		})
		return stopErr
	}, nil
}

func (s *server) String() string { return "agentfs" }

// errFull refuses a write once the database holds its bound.
var errFull = syscall.ENOSPC

// status turns an SDK error or an errno into a FUSE status.
func status(err error) fuse.Status {
	var fe *sdk.FSError
	var errno syscall.Errno
	switch {
	case err == nil:
		return fuse.OK
	case errors.As(err, &fe):
		return fuse.Status(fe.Code)
	case errors.As(err, &errno):
		return fuse.Status(errno)
	}
	return fuse.EIO
}

func abs(name string) string { return "/" + name }

func attr(st *sdk.Stats) *fuse.Attr {
	a := &fuse.Attr{Ino: uint64(st.Ino), Size: uint64(st.Size), Blocks: uint64(st.Size+511) / 512, Mode: uint32(st.Mode), Nlink: uint32(max(st.Nlink, 1)),
		Atime: uint64(st.Atime), Atimensec: uint32(st.AtimeNsec), Mtime: uint64(st.Mtime), Mtimensec: uint32(st.MtimeNsec), Ctime: uint64(st.Ctime), Ctimensec: uint32(st.CtimeNsec)}
	a.Blksize = 4096
	return a
}

// full reports whether the database has reached its bound.
func (s *server) full() bool {
	var used int64
	for _, suffix := range []string{"", "-wal"} {
		if st, err := os.Stat(s.db + suffix); err == nil {
			used += st.Size()
		}
	}
	return used >= s.limit
}

// inDelta copies p up into the database unless it is there already: the
// SDK's own copy-up, by a chmod to the mode p has.
func (s *server) inDelta(ctx context.Context, p string) error {
	if p == "/" {
		return nil
	}
	if _, err := s.afs.FS.Lstat(ctx, p); err == nil {
		return nil
	}
	st, err := s.ofs.LookupPath(ctx, p)
	if err != nil {
		return err
	}
	return s.ofs.Chmod(ctx, p, st.Mode&0o7777)
}

// parentInDelta copies up p's parent: the SDK creates entries only in a
// directory the database has.
func (s *server) parentInDelta(ctx context.Context, p string) error {
	return s.inDelta(ctx, path.Dir(p))
}

func (s *server) GetAttr(name string, _ *fuse.Context) (*fuse.Attr, fuse.Status) {
	var st *sdk.Stats
	err := s.op(func(ctx context.Context) (err error) {
		st, err = s.ofs.LookupPath(ctx, abs(name))
		return err
	})
	if err != nil {
		return nil, status(err)
	}
	return attr(st), fuse.OK
}

func (s *server) OpenDir(name string, _ *fuse.Context) ([]fuse.DirEntry, fuse.Status) {
	var entries []sdk.DirEntry
	err := s.op(func(ctx context.Context) error {
		st, err := s.ofs.LookupPath(ctx, abs(name))
		if err != nil {
			return err
		}
		entries, err = s.ofs.ReaddirPlus(ctx, st.Ino)
		return err
	})
	if err != nil {
		return nil, status(err)
	}
	out := make([]fuse.DirEntry, 0, len(entries))
	for _, e := range entries {
		out = append(out, fuse.DirEntry{Name: e.Name, Mode: uint32(e.Stats.Mode)})
	}
	return out, fuse.OK
}

// change runs one change of the file system under the lock, refused with
// ENOSPC when the database is full.
func (s *server) change(fn func(ctx context.Context) error) fuse.Status {
	return status(s.op(func(ctx context.Context) error {
		if s.full() {
			return errFull
		}
		return fn(ctx)
	}))
}

func (s *server) Mkdir(name string, mode uint32, _ *fuse.Context) fuse.Status {
	p := abs(name)
	return s.change(func(ctx context.Context) error {
		if err := s.parentInDelta(ctx, p); err != nil {
			return err
		}
		return s.ofs.Mkdir(ctx, p, int64(mode&0o7777))
	})
}

// Mknod is refused: special files are never part of a result.
func (s *server) Mknod(string, uint32, uint32, *fuse.Context) fuse.Status { return fuse.EPERM }

func (s *server) Unlink(name string, _ *fuse.Context) fuse.Status {
	return status(s.op(func(ctx context.Context) error { return s.ofs.Unlink(ctx, abs(name)) }))
}

func (s *server) Rmdir(name string, _ *fuse.Context) fuse.Status {
	return status(s.op(func(ctx context.Context) error { return s.ofs.Rmdir(ctx, abs(name)) }))
}

// Rename of a directory the base has fails with EXDEV, as overlayfs's
// does without redirects: the SDK would move the directory alone, not
// the base's files in it. Programs then copy and delete (mv does).
func (s *server) Rename(oldName, newName string, _ *fuse.Context) fuse.Status {
	from, to := abs(oldName), abs(newName)
	return s.change(func(ctx context.Context) error {
		if b := lookupBase(s.base.root, oldName); b.exists && b.kind == sandbox.Dir {
			return sdk.NewFSError(int(syscall.EXDEV), "rename", from, "")
		}
		if err := s.parentInDelta(ctx, to); err != nil {
			return err
		}
		return s.ofs.Rename(ctx, from, to)
	})
}

func (s *server) Link(oldName, newName string, _ *fuse.Context) fuse.Status {
	to := abs(newName)
	return s.change(func(ctx context.Context) error {
		if err := s.parentInDelta(ctx, to); err != nil {
			return err
		}
		return s.ofs.Link(ctx, abs(oldName), to)
	})
}

func (s *server) Symlink(target, linkName string, _ *fuse.Context) fuse.Status {
	p := abs(linkName)
	return s.change(func(ctx context.Context) error {
		if err := s.parentInDelta(ctx, p); err != nil {
			return err
		}
		return s.ofs.Symlink(ctx, target, p)
	})
}

func (s *server) Readlink(name string, _ *fuse.Context) (string, fuse.Status) {
	var target string
	err := s.op(func(ctx context.Context) (err error) {
		target, err = s.ofs.Readlink(ctx, abs(name))
		return err
	})
	return target, status(err)
}

func (s *server) Chmod(name string, mode uint32, _ *fuse.Context) fuse.Status {
	return status(s.op(func(ctx context.Context) error { return s.ofs.Chmod(ctx, abs(name), int64(mode&0o7777)) }))
}

// Chown changes nothing: every file is the agent's, and owners are no
// part of a result.
func (s *server) Chown(string, uint32, uint32, *fuse.Context) fuse.Status { return fuse.OK }

func (s *server) Utimens(name string, atime, mtime *time.Time, _ *fuse.Context) fuse.Status {
	change := func(t *time.Time) sdk.TimeChange {
		if t == nil {
			return sdk.TimeOmit()
		}
		return sdk.TimeSet(t.Unix(), int64(t.Nanosecond()))
	}
	p := abs(name)
	return s.change(func(ctx context.Context) error {
		if err := s.inDelta(ctx, p); err != nil {
			return err
		}
		return s.afs.FS.Utimens(ctx, p, change(atime), change(mtime))
	})
}

func (s *server) Truncate(name string, size uint64, _ *fuse.Context) fuse.Status {
	p := abs(name)
	return s.change(func(ctx context.Context) error {
		if err := s.inDelta(ctx, p); err != nil {
			return err
		}
		f, err := s.afs.FS.Open(ctx, p, sdk.O_RDWR)
		if err != nil {
			return err
		}
		return f.Truncate(ctx, int64(size))
	})
}

func (s *server) Access(string, uint32, *fuse.Context) fuse.Status { return fuse.OK }

func (s *server) StatFs(string) *fuse.StatfsOut {
	return &fuse.StatfsOut{Blocks: uint64(s.limit) / 4096, Bfree: uint64(s.limit) / 4096, Bavail: uint64(s.limit) / 4096, Bsize: 4096, Frsize: 4096, NameLen: 255, Files: 1 << 20, Ffree: 1 << 20}
}

const writeFlags = unix.O_WRONLY | unix.O_RDWR | unix.O_TRUNC | unix.O_APPEND

func (s *server) Open(name string, flags uint32, _ *fuse.Context) (nodefs.File, fuse.Status) {
	p := abs(name)
	var f nodefs.File
	err := s.op(func(ctx context.Context) error {
		if flags&writeFlags == 0 {
			if _, err := s.afs.FS.Lstat(ctx, p); err != nil {
				// Only the base has it: read the exported file itself.
				fd, err := s.base.open(name, unix.O_RDONLY|unix.O_NONBLOCK)
				if err != nil {
					return err
				}
				f = nodefs.NewReadOnlyFile(nodefs.NewLoopbackFile(os.NewFile(uintptr(fd), name)))
				return nil
			}
		} else if s.full() {
			return errFull
		} else if err := s.inDelta(ctx, p); err != nil {
			return err
		}
		sf, err := s.afs.FS.Open(ctx, p, int(flags&unix.O_TRUNC))
		if err != nil {
			return err
		}
		f = &file{File: nodefs.NewDefaultFile(), s: s, f: sf}
		return nil
	})
	return f, status(err)
}

func (s *server) Create(name string, flags, mode uint32, _ *fuse.Context) (nodefs.File, fuse.Status) {
	p := abs(name)
	var f *sdk.File
	st := s.change(func(ctx context.Context) error {
		if err := s.parentInDelta(ctx, p); err != nil {
			return err
		}
		if err := s.ofs.WriteFile(ctx, p, nil, int64(mode&0o7777)); err != nil {
			return err
		}
		var err error
		f, err = s.afs.FS.Open(ctx, p, sdk.O_RDWR)
		return err
	})
	if st != fuse.OK {
		return nil, st
	}
	return &file{File: nodefs.NewDefaultFile(), s: s, f: f}, fuse.OK
}

// file is an open file of the database.
type file struct {
	nodefs.File
	s *server
	f *sdk.File
}

func (f *file) Read(dest []byte, off int64) (fuse.ReadResult, fuse.Status) {
	var n int
	err := f.s.op(func(ctx context.Context) (err error) {
		n, err = f.f.Pread(ctx, dest, off)
		if err == io.EOF {
			return nil
		}
		return err
	})
	if err != nil {
		return nil, status(err)
	}
	return fuse.ReadResultData(dest[:n]), fuse.OK
}

func (f *file) Write(data []byte, off int64) (uint32, fuse.Status) {
	var n int
	st := f.s.change(func(ctx context.Context) error {
		var err error
		n, err = f.f.Pwrite(ctx, data, off)
		return err
	})
	return uint32(n), st
}

func (f *file) Truncate(size uint64) fuse.Status {
	return f.s.change(func(ctx context.Context) error { return f.f.Truncate(ctx, int64(size)) })
}

func (f *file) GetAttr(out *fuse.Attr) fuse.Status {
	var st *sdk.Stats
	err := f.s.op(func(ctx context.Context) (err error) {
		st, err = f.f.Stat(ctx)
		return err
	})
	if err != nil {
		return status(err)
	}
	*out = *attr(st)
	return fuse.OK
}

func (f *file) Flush() fuse.Status { return fuse.OK }

// Fsync commits the batch: what the agent wrote is on the disk.
func (f *file) Fsync(flags int) fuse.Status {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	return status(f.s.commit())
}

// fuseAvailable says why this process cannot mount FUSE, or nil.
func fuseAvailable() error {
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	f.Close()
	if os.Getuid() != 0 {
		return errors.New("mounting FUSE as a user needs fusermount3 and user_allow_other, which git-lease does not use")
	}
	return nil
}
