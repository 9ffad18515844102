package bwrap

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// detach makes, for each stage, a detached copy of its host mount, for the
// sandbox's init (pid), which runs as the lease's own uid and could not
// reach root's directories by path. Each layer of the exported base is
// shown through an idmapping that makes its files (root's on disk, shared
// by every lease) the sandbox's own, so that overlayfs can copy them up
// for this lease alone. Only root can make such mounts: it is the root
// path.
func detach(stages []stage, pid int) ([]int, error) {
	ns, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/ns/user", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(ns)
	var fds []int
	for _, s := range stages {
		var fd int
		var err error
		if s.mount != nil {
			fd, err = s.mount()
		} else {
			fd, err = unix.OpenTree(unix.AT_FDCWD, s.Host, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		}
		if err != nil {
			closeAll(fds)
			return nil, fmt.Errorf("detach a copy of %s: %w", s.Name, err)
		}
		fds = append(fds, fd)
		if !s.Lower && !s.Cache {
			continue
		}
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_RDONLY, Userns_fd: uint64(ns)}
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
			closeAll(fds)
			return nil, fmt.Errorf("idmap the base for the sandbox's uid (needs Linux 5.19 or later and a file system that supports idmapped mounts): %w", err)
		}
	}
	return fds, nil
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// sendMounts passes the detached mounts to the init over its socket.
func sendMounts(sock *os.File, fds []int) error {
	if len(fds) > 250 {
		return fmt.Errorf("too many paths for the sandbox (%d)", len(fds))
	}
	return unix.Sendmsg(int(sock.Fd()), []byte{'m'}, unix.UnixRights(fds...), nil, 0)
}

// receiveMounts is the init's side of sendMounts.
func receiveMounts(sock, n int) ([]int, error) {
	oob := make([]byte, unix.CmsgSpace(4*n))
	_, oobn, _, _, err := unix.Recvmsg(sock, make([]byte, 1), oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("receive the sandbox's mounts: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("receive the sandbox's mounts: %d messages, %v", len(msgs), err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != n {
		return nil, fmt.Errorf("receive the sandbox's mounts: %d of %d, %v", len(fds), n, err)
	}
	return fds, nil
}

// stageAll mounts a tmpfs at stageDir and puts each stage there: the
// mount the host sent for it (fds, root only), or a bind of its host path.
// It then writes the generated /etc files and mounts the overlay.
func stageAll(spec initSpec, fds []int) error {
	if err := unix.Mount("tmpfs", filepath.Dir(stageDir), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("mount the staging tmpfs on %s: %w", filepath.Dir(stageDir), err)
	}
	if err := os.MkdirAll(filepath.Join(stageDir, "etc"), 0o755); err != nil {
		return err
	}
	if spec.Self {
		if err := copySelf(filepath.Join(stageDir, stageSelf), fdSelf); err != nil {
			return fmt.Errorf("copy git-lease for the network forwarder: %w", err)
		}
	}
	for i, s := range spec.Stages {
		at := filepath.Join(stageDir, s.Name)
		var err error
		if s.Dir {
			err = os.Mkdir(at, 0o755)
		} else {
			err = os.WriteFile(at, nil, 0o644)
		}
		if err != nil {
			return err
		}
		if fds != nil {
			err = unix.MoveMount(fds[i], "", unix.AT_FDCWD, at, unix.MOVE_MOUNT_F_EMPTY_PATH)
			unix.Close(fds[i])
		} else {
			err = unix.Mount(s.Host, at, "", unix.MS_BIND|unix.MS_REC, "")
		}
		if err != nil {
			return fmt.Errorf("stage %s: %w", s.Name, err)
		}
	}
	scratch := filepath.Join(stageDir, stageScratch)
	if err := os.Mkdir(scratch, 0o755); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", scratch, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, spec.Scratch); err != nil {
		return fmt.Errorf("mount the scratch tmpfs (%s): %w", spec.Scratch, err)
	}
	for _, d := range scratchDirs {
		dir := filepath.Join(scratch, d.name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			return err
		}
		if err := os.Chmod(dir, d.mode); err != nil { // past the umask
			return err
		}
	}
	if err := os.Mkdir(filepath.Join(scratch, decoyRun), 0o755); err != nil {
		return err
	}
	if err := writeDecoys(filepath.Join(scratch, "home")); err != nil {
		return err
	}
	if err := writeFiles(spec.Files); err != nil {
		return err
	}
	for name, content := range spec.Etc {
		if err := os.WriteFile(filepath.Join(stageDir, "etc", name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	if spec.Served {
		return nil
	}
	merged := filepath.Join(stageDir, stageMerged)
	if err := os.Mkdir(merged, 0o755); err != nil {
		return err
	}
	var lowers []string
	for _, s := range spec.Stages {
		if s.Lower {
			lowers = append(lowers, filepath.Join(stageDir, s.Name))
		}
	}
	lease := filepath.Join(stageDir, stageLease)
	opts := "lowerdir=" + strings.Join(lowers, ":") + ",upperdir=" + filepath.Join(lease, "upper") + ",workdir=" + filepath.Join(lease, "work") + ",userxattr"
	if err := unix.Mount("overlay", merged, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount overlay: %w", err)
	}
	if spec.Caches {
		return mountCaches(spec.Stages)
	}
	return nil
}

// mountCaches mounts the cache overlay: the cache layers the host staged
// (or an empty directory when there are none) under an upper directory of
// the lease's own, next to its /work's.
func mountCaches(stages []stage) error {
	var lowers []string
	for _, s := range stages {
		if s.Cache {
			lowers = append(lowers, filepath.Join(stageDir, s.Name))
		}
	}
	if len(lowers) == 0 {
		empty := filepath.Join(stageDir, "cache-empty")
		if err := os.Mkdir(empty, 0o755); err != nil {
			return err
		}
		lowers = []string{empty}
	}
	lease := filepath.Join(stageDir, stageLease)
	for _, dir := range []string{cacheUpper, cacheWork} {
		if err := os.Mkdir(filepath.Join(lease, dir), 0o755); err != nil && !os.IsExist(err) {
			return err
		}
	}
	at := filepath.Join(stageDir, stageCaches)
	if err := os.Mkdir(at, 0o755); err != nil {
		return err
	}
	opts := "lowerdir=" + strings.Join(lowers, ":") + ",upperdir=" + filepath.Join(lease, cacheUpper) + ",workdir=" + filepath.Join(lease, cacheWork) + ",userxattr"
	if err := unix.Mount("overlay", at, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount the cache overlay: %w", err)
	}
	return nil
}

// socketPair is the host's and the init's ends of the mounts socket.
func socketPair() (host, init *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	return os.NewFile(uintptr(fds[0]), "mounts"), os.NewFile(uintptr(fds[1]), "mounts"), nil
}

// copySelf copies the binary the init was exec'd from (self: fdSelf) to
// dst on the staging tmpfs, for the network forwarder. A bind of the
// binary's host path would show, in the sandbox's mount table, where
// git-lease is installed; the copy shows only its name on a tmpfs. It is
// memory: under a cgroup it counts against the lease's memory bound.
func copySelf(dst string, self int) error {
	var st unix.Stat_t
	if err := unix.Fstat(self, &st); err != nil {
		return err
	}
	out, err := unix.Open(dst, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o555)
	if err != nil {
		return err
	}
	defer unix.Close(out)
	var off int64
	for off < st.Size {
		n, err := unix.Sendfile(out, self, &off, int(st.Size-off))
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("the binary ended at %d of %d bytes", off, st.Size)
		}
	}
	return nil
}
