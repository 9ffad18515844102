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

// Collect brings back the tarball the finished run left on the box
// (boxDir/result.tar, its tree/ packed after the agent ended) with `crabbox
// cp`, and unpacks it into <spec.Dir>/delta, for Delta: the tree as the
// agent left it, modes and symlinks included. Crabbox cannot tell a file's
// size before copying, so the download is bounded while it lands (killed
// and removed once it holds more than MaxCopyBytes), and so is what the
// tarball unpacks to. Nothing under .crabbox/ at the top is ever part of a
// result (see unpackResult). Collecting again replaces the earlier copy. It
// fails before a run has finished with a timing report, and when the box
// left no result (it could not unpack the base, or pack the tree).
func (p Provider) Collect(ctx context.Context, spec sandbox.Spec) error {
	b, err := readBox(spec)
	if err != nil {
		return err
	}
	if err := finishedRun(spec); err != nil {
		return err
	}
	l := layout(spec)
	if err := os.RemoveAll(l.incoming); err != nil {
		return err
	}
	if err := os.Mkdir(l.incoming, 0o700); err != nil {
		return err
	}
	defer os.RemoveAll(l.incoming)
	if err := p.copyBack(ctx, spec, b.ID, boxDir(spec)+"/result.tar"); err != nil {
		return err
	}
	tree := filepath.Join(l.incoming, "tree")
	if err := unpackResult(spec, filepath.Join(l.incoming, "result.tar"), tree, p.MaxCopyBytes); err != nil {
		return fmt.Errorf("the result of box %s: %w", b.ID, err)
	}
	if err := os.RemoveAll(l.delta); err != nil {
		return err
	}
	return os.Rename(tree, l.delta)
}

// Delta is the unpacked result of the box, a whole tree. It is empty or
// missing until Collect has succeeded.
func (Provider) Delta(spec sandbox.Spec) (sandbox.Delta, error) {
	return sandbox.Delta{Root: layout(spec).delta, Layout: sandbox.Full}, nil
}

// finishedRun checks that a run has finished with a timing report (run.json).
func finishedRun(spec sandbox.Spec) error {
	data, err := os.ReadFile(layout(spec).run)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("lease %s has no finished crabbox run to collect from (launch and wait for the agent first)", spec.ID)
	}
	if err != nil {
		return err
	}
	var r runRecord
	if err := json.Unmarshal(data, &r); err != nil || r.Version != 1 {
		return fmt.Errorf("%s is not a run record of version 1", layout(spec).run)
	}
	return nil
}

// copyBack runs crabbox cp into the incoming directory, killing it once
// the copy grows past MaxCopyBytes.
func (p Provider) copyBack(ctx context.Context, spec sandbox.Spec, id, remote string) error {
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
	c, err := p.run(ctx, spec, nil, "cp", "--provider", p.CrabboxProvider, "--id", id, "SANDBOX:"+remote, l.incoming)
	tooLarge := fmt.Errorf("the result of box %s is larger than the %d bytes policy allows to copy back; the copy was stopped and removed", id, p.MaxCopyBytes)
	select {
	case <-over:
		return tooLarge
	default:
	}
	switch {
	case err != nil:
		return err
	case c.code != 0:
		return fmt.Errorf("copy the result back from box %s (the agent may have ended before the box could pack it): %w", id, c.err())
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

// crabboxDir is where Crabbox keeps its own state inside a work directory
// (sync manifest and fingerprint, finalize tokens, git-hydrate-base,
// failure captures), as read from Crabbox 0bba5f7d.
const crabboxDir = ".crabbox"

// ownedByCrabbox reports whether a relative name is under the top-level
// .crabbox/.
func ownedByCrabbox(name string) bool {
	return name == crabboxDir || strings.HasPrefix(name, crabboxDir+"/")
}

// unpackResult makes dir the tree the box's tarball holds, except for the
// top-level .crabbox/, which is exactly what the base has there (usually
// nothing; a repository may commit one), taken from the base tarball
// Release uploaded: nothing under .crabbox/ is ever part of a result. (The
// seed's own .crabbox/ is no source for it: crabbox writes its failure
// captures there.)
func unpackResult(spec sandbox.Spec, tarball, dir string, max int64) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := unpack(tarball, root, max, func(name string) bool { return !ownedByCrabbox(name) }); err != nil {
		return err
	}
	base := filepath.Join(layout(spec).outbox, path.Base(boxDir(spec)), "base.tar")
	if err := unpack(base, root, 0, ownedByCrabbox); err != nil {
		return fmt.Errorf("put back the base's %s/: %w", crabboxDir, err)
	}
	return nil
}
