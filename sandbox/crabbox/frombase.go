package crabbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// fromBase gives a copy made by Crabbox's download what that download
// cannot carry, taken from the base (the seed work tree):
//
//   - a regular file that is a regular file in the base gets the base's
//     mode (Crabbox writes every file 0644, so the executable bit of the
//     box is lost either way; new files stay 0644);
//   - a base symlink whose path is free in the copy, under a directory the
//     copy has, is made again (Crabbox never brings symlinks back).
//
// So mode-only changes and symlink changes made in the box do not come
// back, and neither does a symlink the agent deleted. Everything else in
// the copy is the box's. The copy is only touched through an os.Root, so
// nothing outside it is changed whatever it holds.
func fromBase(base, copyDir string) error {
	root, err := os.OpenRoot(copyDir)
	if err != nil {
		return err
	}
	defer root.Close()
	return filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(base, p)
		if err != nil || rel == "." {
			return err
		}
		if rel == ".git" {
			return filepath.SkipDir
		}
		have, err := root.Lstat(rel)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			have = nil
		case err != nil:
			return err
		}
		switch {
		case d.IsDir():
			if have == nil || !have.IsDir() {
				return filepath.SkipDir
			}
		case d.Type().IsRegular():
			if have != nil && have.Mode().IsRegular() {
				info, err := d.Info()
				if err != nil {
					return err
				}
				return root.Chmod(rel, info.Mode().Perm())
			}
		case d.Type()&fs.ModeSymlink != 0:
			if have != nil {
				return nil
			}
			parent, err := root.Lstat(filepath.Dir(rel))
			if err != nil || !parent.IsDir() {
				return nil
			}
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return root.Symlink(target, rel)
		}
		return nil
	})
}
