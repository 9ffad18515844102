package bwrap

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/git-lease/git-lease/sandbox"
)

// Run as root, a lease with a disk bound keeps its upper and work
// directories on an ext4 file system of their own: a sparse image file in
// its runtime directory, as large as the bound, with one inode per 16 KiB.
// The kernel then refuses (ENOSPC) every write past the bound, whatever
// the agent does: one fallocate, files unlinked while held open, empty
// files (inodes), trees deeper than PATH_MAX or that no one may list. The
// host's watch only reads the file system's counters (fstatfs) to name the
// bound. A person cannot loop-mount a file system, nor set a quota, so
// there the host's walk of the upper directory (disk.go) stays, and so it
// does when mkfs.ext4 or loop devices are missing; the lease's enforcement
// says which binds.
//
// Formatting takes 50-100 ms, so one template per size is formatted once
// per exported base, beside it (it goes with the base), and each lease
// copies only the template's allocated extents (160 KiB at 2 GiB). The
// image is never mounted in the host's mount table: each process that
// reads it (the runner, for the sandbox and to collect; cleanup and
// reconcile, to read what the agent left) makes detached mounts of its
// own, which go with their last descriptor. Every mount of one image goes through the one loop device
// that backs it, and so is one file system: two loop devices on one image
// would be two file systems writing the same blocks.

// imageName is the lease's disk image, in its runtime directory.
const imageName = "disk.ext4"

func imagePath(spec sandbox.Spec) string { return filepath.Join(spec.Dir, imageName) }

// inodesFor is the inode count of a file system of size bytes (the disk
// image, the scratch tmpfs): one per 16 KiB, at least 1024.
func inodesFor(size int64) int64 { return max(1024, size/(16<<10)) }

// imageSize is the image's size for a disk bound: whole 4 KiB blocks.
func imageSize(bound int64) int64 { return (bound + 4095) &^ 4095 }

// kernelDiskMissing says why the kernel cannot bound a lease's disk here,
// "" when it can: run as root, with mkfs.ext4, loop devices and ext4 (a
// container may have neither of the last two).
func kernelDiskMissing() string {
	switch {
	case os.Getuid() != 0:
		return "run by a person, who can mount no file system of their own"
	case mkfsPath() == "":
		return "mkfs.ext4 is not installed (apt-get install e2fsprogs)"
	}
	ctl, err := unix.Open("/dev/loop-control", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return "no loop devices (/dev/loop-control: " + err.Error() + ")"
	}
	unix.Close(ctl)
	fs, err := unix.Fsopen("ext4", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return "no ext4 in this kernel (" + err.Error() + ")"
	}
	unix.Close(fs)
	return ""
}

func mkfsPath() string {
	if p, err := exec.LookPath("mkfs.ext4"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// makeImage gives spec's lease its disk image, a copy of the template
// (Launch gives its directories to the lease's uid: see ownImage). It is
// idempotent: the image appears (by rename) only once it is whole.
func makeImage(spec sandbox.Spec) error {
	final := imagePath(spec)
	if _, err := os.Stat(final); err == nil {
		return nil
	}
	template, err := imageTemplate(spec)
	if err != nil {
		return err
	}
	tmp := final + ".tmp"
	if err := copySparse(tmp, template); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("copy the disk image: %w", err)
	}
	return os.Rename(tmp, final)
}

// imageTemplate is the formatted, empty image for spec's disk bound, kept
// in the directory of spec's base (which the lease holds from Create to
// Discard), formatted first if no lease on that base has yet. Two leases
// formatting at once each rename a complete template into place.
func imageTemplate(spec sandbox.Spec) (string, error) {
	size := imageSize(spec.Limits.DiskBytes)
	path := filepath.Join(basePath(spec.BasesDir, spec.BaseTree), fmt.Sprintf("disk-%d.ext4", size))
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if err := os.MkdirAll(basePath(spec.BasesDir, spec.BaseTree), 0o700); err != nil {
		return "", err
	}
	tmp := path + ".tmp-" + spec.ID
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return "", err
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	// The upper and work directories are made by mkfs (-d), so that a
	// lease need not mount its image to make them.
	root := tmp + ".root"
	defer os.RemoveAll(root)
	for _, dir := range []string{root, filepath.Join(root, "upper"), filepath.Join(root, "work")} {
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return "", err
		}
		if err := os.Chmod(dir, 0o755); err != nil { // past the umask
			return "", err
		}
	}
	// No journal (the file system lives as long as one lease, and a crash
	// loses nothing a lease could keep), no blocks reserved for root or
	// for growing, inode tables initialised lazily: 1.2 MiB written for
	// 2 GiB.
	cmd := exec.Command(mkfsPath(), "-q", "-F", "-b", "4096", "-I", "256", "-N", strconv.FormatInt(inodesFor(size), 10),
		"-m", "0", "-O", "^has_journal,^resize_inode", "-E", "lazy_itable_init=1,nodiscard", "-d", root, tmp)
	cmd.Env = []string{"LC_ALL=C", "PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("%w: format a disk image with mkfs.ext4: %v: %s", sandbox.ErrUnavailable, err, strings.TrimSpace(string(out)))
	}
	return path, os.Rename(tmp, path)
}

// copySparse copies the file src to a new file dst of the same size,
// writing only src's data extents (the rest stays holes).
func copySparse(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if errors.Is(err, os.ErrExist) { // left by a crash
		os.Remove(dst)
		out, err = os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	}
	if err != nil {
		return err
	}
	defer out.Close()
	if err := out.Truncate(st.Size()); err != nil {
		return err
	}
	for off := int64(0); off < st.Size(); {
		data, err := unix.Seek(int(in.Fd()), off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // only a hole is left
		}
		if err != nil {
			return err
		}
		hole, err := unix.Seek(int(in.Fd()), data, unix.SEEK_HOLE)
		if err != nil {
			return err
		}
		if _, err := io.Copy(io.NewOffsetWriter(out, data), io.NewSectionReader(in, data, hole-data)); err != nil {
			return err
		}
		off = hole
	}
	return out.Close()
}

// ownImage gives the image's root and its upper and work directories
// (mode 755: the upper's becomes the mode of the agent's /work) to uid and
// gid, through the image's mount m.
func ownImage(m, uid, gid int) error {
	for _, name := range []string{"", "upper", "work"} {
		if err := unix.Fchownat(m, name, uid, gid, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("give the lease's disk image to its uid: %w", err)
		}
	}
	return nil
}

// mountImage makes a detached mount of the image's file system and returns
// its descriptor: through the loop device that already backs the image if
// there is one, else through a new one that goes when its last mount does.
// A flock on the image makes the search and the attachment one step for
// every git-lease process.
func mountImage(image string) (int, error) {
	// The lock is taken on a descriptor of its own: a loop device keeps
	// the one it is given (and a flock on it) while it is attached.
	lock, err := os.Open(image)
	if err != nil {
		return -1, fmt.Errorf("open the lease's disk image: %w", err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return -1, err
	}
	f, err := os.OpenFile(image, os.O_RDWR, 0)
	if err != nil {
		return -1, fmt.Errorf("open the lease's disk image: %w", err)
	}
	defer f.Close()
	loop, dev, err := backingLoop(f)
	if err == nil && loop < 0 {
		loop, dev, err = attachLoop(f)
	}
	if err != nil {
		return -1, fmt.Errorf("%w: a loop device for the lease's disk image: %v", sandbox.ErrUnavailable, err)
	}
	defer unix.Close(loop) // the mount holds the device from here
	fsfd, err := unix.Fsopen("ext4", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("%w: mount the lease's disk image (ext4): %v", sandbox.ErrUnavailable, err)
	}
	defer unix.Close(fsfd)
	if err := unix.FsconfigSetString(fsfd, "source", dev); err != nil {
		return -1, fmt.Errorf("mount the lease's disk image: %w", err)
	}
	// The inode tables were left unwritten by mkfs: the kernel would zero
	// them in the background, 32 MiB of writes for a 2 GiB image that
	// needs none (a new file system's inodes are zeroed as they are used).
	if err := unix.FsconfigSetFlag(fsfd, "noinit_itable"); err != nil {
		return -1, fmt.Errorf("mount the lease's disk image: %w", err)
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return -1, fmt.Errorf("mount the lease's disk image: %w", err)
	}
	m, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return -1, fmt.Errorf("mount the lease's disk image: %w", err)
	}
	return m, nil
}

// backingLoop opens the loop device that backs image, if any (loop < 0:
// none). Held open, the device cannot be detached.
func backingLoop(image *os.File) (loop int, dev string, err error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(image.Fd()), &st); err != nil {
		return -1, "", err
	}
	bound, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, b := range bound {
		dev := "/dev/" + filepath.Base(filepath.Dir(filepath.Dir(b)))
		fd, err := unix.Open(dev, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		info, err := unix.IoctlLoopGetStatus64(fd)
		if err == nil && info.Device == st.Dev && info.Inode == st.Ino {
			return fd, dev, nil
		}
		unix.Close(fd)
	}
	return -1, "", nil
}

// attachLoop backs a free loop device with image, detached automatically
// when the last mount of it goes.
func attachLoop(image *os.File) (loop int, dev string, err error) {
	ctl, err := unix.Open("/dev/loop-control", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, "", err
	}
	defer unix.Close(ctl)
	for range 16 { // another program may take the free device first
		n, err := unix.IoctlRetInt(ctl, unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return -1, "", err
		}
		dev := "/dev/loop" + strconv.Itoa(n)
		fd, err := unix.Open(dev, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, "", err
		}
		cfg := unix.LoopConfig{Fd: uint32(image.Fd()), Size: 4096}
		cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR
		err = unix.IoctlLoopConfigure(fd, &cfg)
		if err == nil {
			return fd, dev, nil
		}
		unix.Close(fd)
		if !errors.Is(err, unix.EBUSY) {
			return -1, "", err
		}
	}
	return -1, "", errors.New("every free loop device was taken meanwhile")
}

// mounted holds, per image, the calling process's own mount of it (see
// leaseDirs), until Discard.
var mounted = struct {
	sync.Mutex
	fds map[string]int
}{fds: map[string]int{}}

// leaseDirs are the lease's upper and work directories as this process
// reaches them: in its mount of the lease's disk image when it has one
// (disk is that mount's descriptor), else in its runtime directory (disk
// is -1). The mount stays until Discard or the process's exit.
func leaseDirs(spec sandbox.Spec) (dirs, error) {
	image := imagePath(spec)
	if _, err := os.Stat(image); errors.Is(err, os.ErrNotExist) {
		return layout(spec), nil
	} else if err != nil {
		return dirs{}, err
	}
	mounted.Lock()
	defer mounted.Unlock()
	m, ok := mounted.fds[image]
	if !ok {
		var err error
		if m, err = mountImage(image); err != nil {
			return dirs{}, err
		}
		mounted.fds[image] = m
	}
	root := "/proc/self/fd/" + strconv.Itoa(m)
	return dirs{upper: root + "/upper", work: root + "/work", cache: root + "/" + cacheUpper, disk: m}, nil
}

// unmountImage drops this process's mount of spec's image, if it has one.
func unmountImage(spec sandbox.Spec) {
	mounted.Lock()
	defer mounted.Unlock()
	if m, ok := mounted.fds[imagePath(spec)]; ok {
		unix.Close(m)
		delete(mounted.fds, imagePath(spec))
	}
}

// diskFull reports whether the file system behind fd has no block or no
// inode left for the agent: the kernel refuses its next write.
func diskFull(fd int) bool {
	var st unix.Statfs_t
	return unix.Fstatfs(fd, &st) == nil && (st.Bavail == 0 || st.Ffree == 0)
}
