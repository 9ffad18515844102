package main

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// copyCommand copies between the host and a box. Exactly one side is
// SANDBOX:PATH, an absolute path in the box. As in Crabbox, a directory
// destination that exists receives the source under its own name, one that
// does not exist becomes the copy; downloads carry only regular files
// (mode 0644) and directories (0755), uploads keep modes and refuse
// symlinks unless -L follows them.
func copyCommand(args []string) *exitError {
	flags := newFlags("cp")
	flags.String("provider", "", "")
	id := flags.String("id", "", "")
	follow := flags.Bool("L", false, "")
	if err := parse(flags, args); err != nil {
		return err
	}
	if *id == "" || flags.NArg() != 2 {
		return fail(2, "usage: crabbox cp --id <lease-id-or-slug> [-L] <src> <dst>")
	}
	src, dst := flags.Arg(0), flags.Arg(1)
	srcRemote, srcPath := sandboxPath(src)
	dstRemote, dstPath := sandboxPath(dst)
	if srcRemote == dstRemote {
		return fail(2, "usage: crabbox cp --id <lease-id-or-slug> [-L] <src> <dst> (exactly one path must use SANDBOX:PATH)")
	}
	root, err := providerRoot()
	if err != nil {
		return err
	}
	b, err := loadBox(root, *id)
	if err != nil {
		return err
	}
	remote := srcPath
	if dstRemote {
		remote = dstPath
	}
	if !path.IsAbs(remote) || path.Clean(remote) != remote {
		return fail(2, "the stand-in needs a clean absolute SANDBOX path, not %q", remote)
	}
	inBox := filepath.Join(boxFS(root, b.ID), filepath.FromSlash(remote))
	if srcRemote {
		return copyTree(inBox, target(dstPath, inBox), false, false)
	}
	return copyTree(srcPath, target(inBox, srcPath), true, *follow)
}

// sandboxPath splits a SANDBOX:PATH argument (the prefix in any case).
func sandboxPath(arg string) (bool, string) {
	prefix, rest, ok := strings.Cut(arg, ":")
	if ok && strings.EqualFold(prefix, "SANDBOX") {
		return true, rest
	}
	return false, arg
}

// target is where a copy of src lands for the destination dst.
func target(dst, src string) string {
	if info, err := os.Stat(dst); err == nil && info.IsDir() {
		return filepath.Join(dst, filepath.Base(src))
	}
	return dst
}

// copyTree copies src to dst. upload keeps modes and symlinks (following
// them with follow, refusing them without); a download drops symlinks and
// special files and normalizes modes.
func copyTree(src, dst string, upload, follow bool) *exitError {
	delay, _ := time.ParseDuration(knob("CP_DELAY", "0s"))
	if _, err := os.Lstat(src); err != nil {
		return fail(7, "copy: %v", err)
	}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(out, 0o755)
		case d.Type()&fs.ModeSymlink != 0 && upload && !follow:
			return fail(2, "archive copy refuses host symlink %s; pass -L to follow it", p)
		case d.Type()&fs.ModeSymlink != 0 && upload:
			time.Sleep(delay)
			resolved, err := filepath.EvalSymlinks(p)
			if err != nil {
				return err
			}
			return copyEntry(resolved, out, true)
		case d.Type().IsRegular():
			time.Sleep(delay)
			return copyEntry(p, out, upload)
		}
		return nil // a download drops links and special files
	})
	var exit *exitError
	if errors.As(err, &exit) {
		return exit
	}
	if err != nil {
		return fail(7, "copy: %v", err)
	}
	return nil
}
