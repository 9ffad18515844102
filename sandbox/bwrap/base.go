package bwrap

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/git-lease/git-lease/sandbox"
)

// Bases are exported once per tree hash into <BasesDir>/<tree>/tree and
// shared by every lease on that tree as the overlay's lower layer, which a
// lease can never write: its writes land in its own upper directory. The
// files keep their modes, because the agent sees them through the overlay. <BasesDir>/<tree>/users
// holds one empty file per lease that uses it: the reference count. All
// changes happen under an exclusive flock on <BasesDir>/.lock, and an export
// becomes visible only by an atomic rename, so a half-written base is never
// used.

func basePath(spec sandbox.Spec) string {
	return filepath.Join(spec.BasesDir, spec.BaseTree)
}

// lowerDir is the exported base tree of spec, the overlay's lower layer.
func lowerDir(spec sandbox.Spec) string {
	return filepath.Join(basePath(spec), "tree")
}

// withBasesLock runs fn holding the bases lock.
func withBasesLock(spec sandbox.Spec, fn func() error) error {
	if err := os.MkdirAll(spec.BasesDir, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(spec.BasesDir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return err
	}
	defer unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return fn()
}

// acquireBase exports the base if no lease has yet and counts spec's lease
// as a user. It is idempotent per lease.
func acquireBase(spec sandbox.Spec) error {
	if len(spec.BaseTree) != 40 || strings.Trim(spec.BaseTree, "0123456789abcdef") != "" {
		return fmt.Errorf("bad base tree %q", spec.BaseTree)
	}
	return withBasesLock(spec, func() error {
		dir := basePath(spec)
		if _, err := os.Stat(filepath.Join(dir, "tree")); errors.Is(err, fs.ErrNotExist) {
			if err := exportBase(spec); err != nil {
				return err
			}
		} else if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dir, "users"), 0o700); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, "users", spec.ID), nil, 0o600)
	})
}

// exportBase writes the tree into a temporary directory next to its final
// place, makes it read-only and renames it into place. Leftovers of an
// export that crashed are removed first.
func exportBase(spec sandbox.Spec) error {
	stale, _ := filepath.Glob(filepath.Join(spec.BasesDir, ".tmp-*"))
	for _, s := range stale {
		removeAll(s)
	}
	tmp, err := os.MkdirTemp(spec.BasesDir, ".tmp-"+spec.BaseTree+"-")
	if err != nil {
		return err
	}
	tree := filepath.Join(tmp, "tree")
	if err := os.Mkdir(tree, 0o755); err != nil {
		return err
	}
	if err := spec.ExportBase(tree); err != nil {
		removeAll(tmp)
		return fmt.Errorf("export base %s: %w", spec.BaseTree[:12], err)
	}
	if err := os.Rename(tmp, basePath(spec)); err != nil {
		removeAll(tmp)
		return err
	}
	return nil
}

// releaseBase drops spec's lease from the base's users and removes the base
// when no lease uses it any more. Releasing twice is harmless.
func releaseBase(spec sandbox.Spec) error {
	return withBasesLock(spec, func() error {
		dir := basePath(spec)
		err := os.Remove(filepath.Join(dir, "users", spec.ID))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		users, err := os.ReadDir(filepath.Join(dir, "users"))
		if errors.Is(err, fs.ErrNotExist) {
			users, err = nil, nil
		}
		if err != nil || len(users) > 0 {
			return err
		}
		return removeAll(dir)
	})
}

// removeAll removes a tree that may contain read-only directories (bases,
// and overlay work directories). It never follows symlinks.
func removeAll(dir string) error {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
