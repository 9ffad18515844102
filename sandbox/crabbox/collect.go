package crabbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/git-lease/git-lease/sandbox"
)

// Collect copies the box's work directory (the one the finished run
// reported) back into <spec.Dir>/delta with `crabbox cp --id ID
// SANDBOX:<workdir> <dir>`, for Delta. Crabbox cannot tell a directory's
// size before copying, so the copy is bounded while it lands: it is killed
// and removed once it holds more than MaxCopyBytes. Crabbox's download
// carries contents only (regular files and directories, modes normalized,
// no symlinks), so the copy then takes the file modes and symlinks of the
// base (see fromBase). Crabbox's own files (.crabbox/ at the top of the
// work directory) are never part of the result (see keepOwnOut), and a
// base file Crabbox's sync never gave the box (see restoreUnsynced) is
// never reported deleted.
// Collecting again replaces the earlier copy. It fails
// before a run has finished with a timing report.
func (p Provider) Collect(ctx context.Context, spec sandbox.Spec) error {
	b, err := readBox(spec)
	if err != nil {
		return err
	}
	workdir, err := readWorkdir(spec)
	if err != nil {
		return err
	}
	l := layout(spec)
	if err := os.RemoveAll(l.incoming); err != nil {
		return err
	}
	if err := os.Mkdir(l.incoming, 0o700); err != nil {
		return err
	}
	if err := p.copyBack(ctx, spec, b.ID, workdir); err != nil {
		os.RemoveAll(l.incoming)
		return err
	}
	tree := filepath.Join(l.incoming, path.Base(workdir))
	if info, err := os.Lstat(tree); err != nil || !info.IsDir() {
		return fmt.Errorf("crabbox cp did not bring back the directory %s of box %s", workdir, b.ID)
	}
	received, err := syncManifest(tree)
	if err != nil {
		return fmt.Errorf("box %s: %w", b.ID, err)
	}
	if err := keepOwnOut(l.seed, tree); err != nil {
		return fmt.Errorf("take crabbox's own files out of the copy of box %s: %w", b.ID, err)
	}
	if err := fromBase(l.seed, tree); err != nil {
		return fmt.Errorf("complete the copy of box %s from the base: %w", b.ID, err)
	}
	if err := restoreUnsynced(l.seed, tree, received); err != nil {
		return fmt.Errorf("put back the base files crabbox did not sync to box %s: %w", b.ID, err)
	}
	if err := os.RemoveAll(l.delta); err != nil {
		return err
	}
	if err := os.Rename(tree, l.delta); err != nil {
		return err
	}
	return os.RemoveAll(l.incoming)
}

// Delta is the collected copy of the box's work directory, a whole tree.
// It is empty or missing until Collect has succeeded.
func (Provider) Delta(spec sandbox.Spec) (sandbox.Delta, error) {
	return sandbox.Delta{Root: layout(spec).delta, Layout: sandbox.Full}, nil
}

// readWorkdir is the box's work directory, as the finished run reported it.
func readWorkdir(spec sandbox.Spec) (string, error) {
	data, err := os.ReadFile(layout(spec).run)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("lease %s has no finished crabbox run to collect from (launch and wait for the agent first)", spec.ID)
	}
	if err != nil {
		return "", err
	}
	var r runRecord
	if err := json.Unmarshal(data, &r); err != nil || r.Version != 1 {
		return "", fmt.Errorf("%s is not a run record of version 1", layout(spec).run)
	}
	if !path.IsAbs(r.Workdir) || path.Clean(r.Workdir) != r.Workdir || r.Workdir == "/" {
		return "", fmt.Errorf("crabbox reported the run's work directory as %q, which git-lease cannot copy back (a delegated provider may not report one)", r.Workdir)
	}
	return r.Workdir, nil
}

// copyBack runs crabbox cp into the incoming directory, killing it once
// the copy grows past MaxCopyBytes.
func (p Provider) copyBack(ctx context.Context, spec sandbox.Spec, id, workdir string) error {
	l := layout(spec)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	over := make(chan struct{}, 1)
	if p.MaxCopyBytes > 0 {
		go func() {
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					if treeSize(l.incoming) > p.MaxCopyBytes {
						over <- struct{}{}
						cancel()
						return
					}
				}
			}
		}()
	}
	c, err := p.run(ctx, spec, nil, "cp", "--provider", p.CrabboxProvider, "--id", id, "SANDBOX:"+workdir, l.incoming)
	tooLarge := fmt.Errorf("the work directory of box %s is larger than the %d bytes policy allows to copy back; the copy was stopped and removed", id, p.MaxCopyBytes)
	select {
	case <-over:
		return tooLarge
	default:
	}
	switch {
	case err != nil:
		return err
	case c.code != 0:
		return fmt.Errorf("copy the work directory back from box %s: %w", id, c.err())
	case p.MaxCopyBytes > 0 && treeSize(l.incoming) > p.MaxCopyBytes:
		return tooLarge
	}
	return nil
}

// treeSize adds up the sizes of everything under dir, never following a
// symlink; what disappears while it looks is skipped.
func treeSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// crabboxDir is where Crabbox keeps its own state inside the box's work
// directory (sync manifest and fingerprint, finalize tokens,
// git-hydrate-base, captures), as read from Crabbox 0bba5f7d.
const crabboxDir = ".crabbox"

// keepOwnOut makes .crabbox/ in the copy exactly what the base has there
// (usually nothing): whatever Crabbox or the agent wrote under it is
// removed, and the base's own .crabbox/ entries (a repository may commit
// one) are put back from the seed, so nothing under .crabbox/ is ever
// part of a result. The copy is only touched through an os.Root.
func keepOwnOut(base, copyDir string) error {
	root, err := os.OpenRoot(copyDir)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.RemoveAll(crabboxDir); err != nil {
		return err
	}
	from := filepath.Join(base, crabboxDir)
	if info, err := os.Lstat(from); err != nil || !info.IsDir() {
		if err == nil && info.Mode().IsRegular() {
			return copyIn(root, from, crabboxDir, info.Mode().Perm())
		}
		return nil // a base symlink is made again by fromBase
	}
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(base, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return root.Mkdir(rel, 0o755)
		case d.Type().IsRegular():
			return copyIn(root, p, rel, info.Mode().Perm())
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return root.Symlink(target, rel)
		}
		return nil
	})
}

// copyIn copies the host file src to rel inside root with mode perm.
func copyIn(root *os.Root, src, rel string, perm fs.FileMode) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := root.WriteFile(rel, data, perm); err != nil {
		return err
	}
	return root.Chmod(rel, perm)
}

// syncManifest reads the paths Crabbox synced into the box, from the
// NUL-separated .crabbox/sync-manifest it keeps in the work directory. A
// copy without one fails: git-lease could not tell a file the agent deleted
// from one the box never had.
func syncManifest(tree string) (map[string]bool, error) {
	data, err := os.ReadFile(filepath.Join(tree, crabboxDir, "sync-manifest"))
	if err != nil {
		return nil, fmt.Errorf("crabbox left no readable sync manifest (.crabbox/sync-manifest) in the work directory, so which base files the box received is unknown: %v", err)
	}
	received := map[string]bool{}
	for _, name := range strings.Split(string(data), "\x00") {
		if name != "" {
			received[filepath.Clean(name)] = true
		}
	}
	return received, nil
}

// restoreUnsynced puts back into the copy each base file or symlink that
// Crabbox's sync left out (built-in excludes such as node_modules, .cache
// or .venv at any depth, and what .crabboxignore names) when the copy has
// nothing at its path: the box never had it, so it is no deletion. What
// the agent made at such a path is kept. The copy is only touched through
// an os.Root.
func restoreUnsynced(base, copyDir string, received map[string]bool) error {
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
		if rel == ".git" || rel == crabboxDir {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() || received[rel] {
			return nil
		}
		if _, err := root.Lstat(rel); !errors.Is(err, fs.ErrNotExist) {
			return err // the copy has something there (or cannot be read)
		}
		if err := root.MkdirAll(filepath.Dir(rel), 0o755); err != nil {
			return nil // a parent the agent made a file: its change stands
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.Type().IsRegular():
			return copyIn(root, p, rel, info.Mode().Perm())
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return root.Symlink(target, rel)
		}
		return nil
	})
}
