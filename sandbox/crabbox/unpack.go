package crabbox

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// unpack unpacks the entries of a tarball that keep takes (by their clean
// relative name) into root. The tarball may be the box's, so nothing in it
// is trusted: every entry is written through root (no entry lands outside
// it, whatever its name or the symlinks before it), an entry may appear
// only once and only where nothing is yet, and only directories, regular
// files (with their permission bits), symlinks (written as they are, never
// followed) and hard links (made copies) are taken; anything else fails.
// What the files hold is bounded by max bytes in all (0: no bound).
func unpack(tarball string, root *os.Root, max int64, keep func(name string) bool) error {
	f, err := os.Open(tarball)
	if err != nil {
		return err
	}
	defer f.Close()
	seen := map[string]bool{}
	var total int64
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read the tarball: %w", err)
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if name == "." {
			continue
		}
		if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("the tarball holds %q, outside its tree", h.Name)
		}
		if !keep(name) {
			continue
		}
		if seen[name] {
			return fmt.Errorf("the tarball holds %s twice", name)
		}
		seen[name] = true
		size := func(n int64) error {
			if total += n; max > 0 && total > max {
				return fmt.Errorf("it unpacks to more than the %d bytes policy allows to copy back", max)
			}
			return nil
		}
		perm := fs.FileMode(h.Mode) & fs.ModePerm
		switch h.Typeflag {
		case tar.TypeDir:
			err = root.MkdirAll(name, 0o755)
		case tar.TypeReg:
			if err := size(h.Size); err != nil {
				return err
			}
			err = writeEntry(root, name, tr, perm)
		case tar.TypeSymlink:
			err = root.Symlink(h.Linkname, name)
		case tar.TypeLink:
			var src *os.File
			if src, err = root.Open(path.Clean(strings.TrimPrefix(h.Linkname, "./"))); err == nil {
				var info fs.FileInfo
				if info, err = src.Stat(); err == nil && info.Mode().IsRegular() {
					if err := size(info.Size()); err != nil {
						src.Close()
						return err
					}
					err = writeEntry(root, name, src, info.Mode().Perm())
				} else if err == nil {
					err = fmt.Errorf("a hard link to %s, which is no file", h.Linkname)
				}
				src.Close()
			}
		default:
			return fmt.Errorf("the tarball holds %s, which is neither a directory, a file nor a symlink (type %q)", name, h.Typeflag)
		}
		if err != nil {
			return fmt.Errorf("unpack %s: %w", name, err)
		}
	}
}

// writeEntry creates the file name in root, which must not exist yet, with
// what r holds and mode perm.
func writeEntry(root *os.Root, name string, r io.Reader, perm fs.FileMode) error {
	out, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return root.Chmod(name, perm)
}
