package bwrap

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// blockCost is what an inode costs at least: an empty file takes no
// blocks, but one of the host file system's finite inodes.
const blockCost = 4096

// unmeasurable is the usage of a tree that cannot be measured whole: over
// any bound.
const unmeasurable = math.MaxInt64

// diskUsage is what the upper directory holds: for each entry the largest
// of its apparent size, its allocated blocks and one block, so sparse and
// empty files count. Part of a tree that the walk cannot see makes it
// unmeasurable: a path longer than the kernel resolves (such a tree can
// never be a result either), or a directory its owner cannot list even
// after the walk opened it (a person's agent is the directory's owner and
// may chmod it to 000; directory modes are no part of a result).
func diskUsage(dir string) int64 {
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case errors.Is(err, fs.ErrPermission) && d != nil && d.IsDir():
			if os.Chmod(p, 0o700) != nil {
				return err
			}
			sub := diskUsage(p)
			if sub == unmeasurable {
				return fs.ErrPermission
			}
			total += sub
			return fs.SkipDir
		case errors.Is(err, unix.ENAMETOOLONG):
			return err
		case err != nil:
			return nil // gone meanwhile
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			if errors.Is(err, unix.ENAMETOOLONG) {
				return err
			}
			return nil
		}
		total += max(st.Size, st.Blocks*512, blockCost)
		return nil
	})
	if err != nil {
		return unmeasurable
	}
	return total
}

// unlinkedOpen is what the files that pid holds open but that no directory
// names any more occupy: on disk (an unlinked file of the upper directory,
// which a walk cannot find) and in memory (a memfd). Files on the scratch
// tmpfs (scratchDev) are counted with it. seen keeps each file once over
// all the sandbox's processes.
func unlinkedOpen(pid string, scratchDev uint64, seen map[[2]uint64]bool) (disk, memory int64) {
	fdDir := "/proc/" + pid + "/fd/"
	entries, err := os.ReadDir(fdDir)
	if err != nil {
		return 0, 0
	}
	for _, e := range entries {
		var st unix.Stat_t
		if unix.Stat(fdDir+e.Name(), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 0 || st.Dev == scratchDev {
			continue
		}
		key := [2]uint64{st.Dev, st.Ino}
		if seen[key] {
			continue
		}
		seen[key] = true
		size := max(st.Size, st.Blocks*512)
		if target, err := os.Readlink(fdDir + e.Name()); err == nil && strings.HasPrefix(target, "/memfd:") {
			memory += size
		} else {
			disk += size
		}
	}
	return disk, memory
}

// devOf is the device of the file system fd is on (0 when fd < 0).
func devOf(fd int) uint64 {
	var st unix.Stat_t
	if fd < 0 || unix.Fstat(fd, &st) != nil {
		return 0
	}
	return st.Dev
}

// openDirs gives the owner of every directory under dir (the agent has
// ended) read, write and search permission, before the walk reads it.
func openDirs(dir string) {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if info, err := d.Info(); err == nil && info.Mode().Perm()&0o700 != 0o700 {
			os.Chmod(p, info.Mode().Perm()|0o700)
		}
		return nil
	})
}
