package refs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/helper/chroot"
	"github.com/go-git/go-billy/v5/osfs"
)

// A pre-receive hook runs while the pushed objects wait in git's quarantine
// directory (<objects>/tmp_objdir-incoming-…), which git names in
// GIT_OBJECT_DIRECTORY (and GIT_QUARANTINE_PATH), with the repository's own
// object directory listed in GIT_ALTERNATE_OBJECT_DIRECTORIES. go-git reads
// neither variable (it looks for loose objects, not packs, in whichever
// incoming directory it finds first). It reads objects/info/alternates, but
// opens each entry as the "objects" directory of the entry's parent, so an
// entry must be a directory named "objects", which the quarantine is not.
// Nor may a hook write into the repository or the quarantine (whatever is
// in the quarantine moves into the repository when the push is accepted).
//
// OpenReceiving therefore builds a stand-in git directory in a temporary
// directory: objects/info/alternates lists, in git's order, a symlink named
// "objects" to each object directory (the quarantine first), and refs,
// packed-refs and config are symlinks to the repository's. git, run with
// GIT_DIR set to the stand-in, follows those symlinks. go-git reads through
// billy's chroot file system, which refuses symlinks that leave the chroot
// ("chroot boundary crossed"), so the stand-in is read through a chroot
// whose underlying file system has no symlink support of its own: billy
// then leaves the symlinks to the operating system.

// maxAlternates bounds the object directories OpenReceiving follows.
const maxAlternates = 64

// OpenReceiving opens the repository that a git hook runs in, as git
// started the hook: dir is the hook's working directory and environ its
// environment (GIT_DIR, and GIT_OBJECT_DIRECTORY and
// GIT_ALTERNATE_OBJECT_DIRECTORIES while a push is quarantined). Reads see
// the objects being pushed as well as the repository's objects, refs and
// configuration. The Repo is for reading only: go-git cannot write objects
// through it, and git refuses ref updates while a push is quarantined.
// Without a quarantine it reads the repository's own objects. Call done at
// the end: it removes the temporary directory, never what it points to.
func OpenReceiving(dir string, environ []string) (repo *Repo, done func(), err error) {
	common, err := hookCommonDir(dir, environ)
	if err != nil {
		return nil, nil, err
	}
	dirs, err := receivingObjectDirs(dir, common, environ)
	if err != nil {
		return nil, nil, err
	}
	tmp, err := os.MkdirTemp("", "git-lease-receive-")
	if err != nil {
		return nil, nil, err
	}
	done = func() { os.RemoveAll(tmp) } // RemoveAll removes symlinks, not their targets
	if err := standIn(tmp, common, dirs); err != nil {
		done()
		return nil, nil, fmt.Errorf("open the repository receiving a push: %w", err)
	}
	r := &Repo{GitDir: tmp, CommonDir: tmp}
	if err := r.openStoreOn(chroot.New(followingOS{osfs.Default, osfs.Default, osfs.Default}, tmp),
		chroot.New(followingOS{osfs.Default, osfs.Default, osfs.Default}, "/")); err != nil {
		done()
		return nil, nil, err
	}
	return r, done, nil
}

// followingOS is the operating system's file system without billy's
// Symlink interface (Lstat, Readlink), so that a billy chroot on it lets the
// operating system follow symlinks, as git does, instead of resolving them
// itself and refusing those that point out of the chroot. Writes through it
// fail, because go-git's object writers need Lstat.
type followingOS struct {
	billy.Basic
	billy.Dir
	billy.TempFile
}

// hookCommonDir asks git, in the hook's own environment, for the
// repository's common directory.
func hookCommonDir(dir string, environ []string) (string, error) {
	cmd := exec.Command("git", "rev-parse", "--path-format=absolute", "--git-common-dir")
	cmd.Dir = dir
	cmd.Env = environ
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("find the repository the hook runs in: git rev-parse: %s", firstLine(stderr.String(), err))
	}
	return string(bytes.TrimSpace(out)), nil
}

// receivingObjectDirs lists the object directories in the order git
// searches them: GIT_OBJECT_DIRECTORY (the quarantine during a push, else
// the repository's), GIT_ALTERNATE_OBJECT_DIRECTORIES, the repository's
// own, and then every objects/info/alternates entry of those, once each.
func receivingObjectDirs(dir, common string, environ []string) ([]string, error) {
	var todo []string
	for _, kv := range environ {
		switch name, value, _ := strings.Cut(kv, "="); name {
		case "GIT_OBJECT_DIRECTORY":
			todo = append([]string{value}, todo...)
		case "GIT_ALTERNATE_OBJECT_DIRECTORIES":
			alts, err := splitAlternates(value)
			if err != nil {
				return nil, err
			}
			todo = append(todo, alts...)
		}
	}
	todo = append(todo, filepath.Join(common, "objects"))
	var dirs []string
	seen := map[string]bool{}
	for len(todo) > 0 {
		d := todo[0]
		todo = todo[1:]
		if d == "" {
			continue
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		if d = filepath.Clean(d); seen[d] {
			continue
		}
		seen[d] = true
		if len(dirs) == maxAlternates {
			return nil, fmt.Errorf("more than %d object directories: check objects/info/alternates for a loop", maxAlternates)
		}
		dirs = append(dirs, d)
		b, err := os.ReadFile(filepath.Join(d, "info", "alternates"))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if line = strings.TrimSpace(line); line != "" && line[0] != '#' {
				if !filepath.IsAbs(line) { // relative to the object directory, as git has it
					line = filepath.Join(d, line)
				}
				todo = append(todo, line)
			}
		}
	}
	return dirs, nil
}

// splitAlternates splits GIT_ALTERNATE_OBJECT_DIRECTORIES: paths separated
// by ":", each possibly a C-style quoted string (git quotes paths that hold
// a colon or a quote).
func splitAlternates(value string) ([]string, error) {
	var out []string
	for value != "" {
		if value[0] == '"' {
			end := 1
			for ; end < len(value) && value[end] != '"'; end++ {
				if value[end] == '\\' {
					end++ // an escaped character, which may be a quote
				}
			}
			if end >= len(value) {
				return nil, fmt.Errorf("GIT_ALTERNATE_OBJECT_DIRECTORIES: unterminated quote in %q", value)
			}
			p, err := strconv.Unquote(value[:end+1])
			if err != nil {
				return nil, fmt.Errorf("GIT_ALTERNATE_OBJECT_DIRECTORIES: %q: %v", value[:end+1], err)
			}
			out = append(out, p)
			value = strings.TrimPrefix(value[end+1:], ":")
			continue
		}
		p, rest, _ := strings.Cut(value, ":")
		out = append(out, p)
		value = rest
	}
	return out, nil
}

// standIn lays out the stand-in git directory in tmp for the repository
// at common, whose objects are in dirs.
func standIn(tmp, common string, dirs []string) error {
	if err := os.MkdirAll(filepath.Join(tmp, "objects", "info"), 0o700); err != nil {
		return err
	}
	var list strings.Builder
	for i, d := range dirs {
		link := filepath.Join(tmp, "odb", strconv.Itoa(i), "objects")
		if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
			return err
		}
		if err := os.Symlink(d, link); err != nil {
			return err
		}
		list.WriteString(link + "\n")
	}
	if err := os.WriteFile(filepath.Join(tmp, "objects", "info", "alternates"), []byte(list.String()), 0o600); err != nil {
		return err
	}
	for _, name := range []string{"refs", "packed-refs", "config"} {
		target := filepath.Join(common, name)
		if _, err := os.Lstat(target); errors.Is(err, os.ErrNotExist) && name == "packed-refs" {
			continue
		}
		if err := os.Symlink(target, filepath.Join(tmp, name)); err != nil {
			return err
		}
	}
	head, err := os.ReadFile(filepath.Join(common, "HEAD"))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(tmp, "HEAD"), head, 0o600)
}
