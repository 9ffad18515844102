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

// Bases are exported once per tree hash into <BasesDir>/<tree> and shared
// by every lease on that tree as the overlay's lower layers, which a lease
// can never write: its writes land in its own upper directory. The files
// keep their modes, because the agent sees them through the overlay.
//
// A base is either a whole export (<tree>/tree) or a layer (<tree>/layer)
// over another base, named in <tree>/parent: the files that differ, and
// whiteouts and opaque directories for what the layer hides (see
// refs.ExportLayer). A new tree is laid over the exported base nearest to
// it (fewest differing paths), so a lease on a branch that moved by N
// files since the last export costs O(N), not O(tree). A stack as deep as
// maxStack is not stacked on again: the next tree over it is exported
// whole.
//
// <tree>/users holds one empty file per lease that uses the base, directly
// or through a layer over it: no base in use is ever removed. Bases stay
// after their last user, for the next lease on a nearby tree, until
// EvictBases removes them; the users directory's modification time is
// when a lease last came or went. All changes happen under an exclusive
// flock on <BasesDir>/.lock, and an export becomes visible only by an
// atomic rename, so a half-written base is never used.

// maxStack is the most lower layers a lease's overlay has. Each one costs
// every lookup that misses it (a file of the bottom base is looked up in
// every layer above), and overlayfs allows up to 500.
const maxStack = 16

func basePath(bases, tree string) string {
	return filepath.Join(bases, tree)
}

func validTree(s string) bool {
	return len(s) == 40 && strings.Trim(s, "0123456789abcdef") == ""
}

// stack is the chain of bases that make tree, from tree itself down to
// the whole export at the bottom. A tree not exported has none.
func stack(bases, tree string) ([]string, error) {
	var chain []string
	for {
		if len(chain) == maxStack {
			return nil, fmt.Errorf("base %s: the layers under it are more than %d deep", tree[:12], maxStack)
		}
		dir := basePath(bases, tree)
		chain = append(chain, tree)
		if _, err := os.Stat(filepath.Join(dir, "tree")); err == nil {
			return chain, nil
		}
		b, err := os.ReadFile(filepath.Join(dir, "parent"))
		if errors.Is(err, fs.ErrNotExist) && len(chain) == 1 {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("base %s: %w", tree[:12], err)
		}
		if tree = strings.TrimSpace(string(b)); !validTree(tree) {
			return nil, fmt.Errorf("base %s: bad parent %q", chain[len(chain)-1][:12], b)
		}
	}
}

// lowerDirs are the overlay's lower layers for spec's base tree, the
// topmost first.
func lowerDirs(spec sandbox.Spec) ([]string, error) {
	chain, err := stack(spec.BasesDir, spec.BaseTree)
	if err != nil {
		return nil, err
	}
	if len(chain) == 0 {
		return nil, fmt.Errorf("base %s is not exported", spec.BaseTree)
	}
	var dirs []string
	for i, t := range chain {
		name := "layer"
		if i == len(chain)-1 {
			name = "tree"
		}
		dirs = append(dirs, filepath.Join(basePath(spec.BasesDir, t), name))
	}
	return dirs, nil
}

// withBasesLock runs fn holding the bases lock.
func withBasesLock(bases string, fn func() error) error {
	if err := os.MkdirAll(bases, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(bases, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
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
// as a user of it and of every base under it. It is idempotent per lease.
func acquireBase(spec sandbox.Spec) error {
	if !validTree(spec.BaseTree) {
		return fmt.Errorf("bad base tree %q", spec.BaseTree)
	}
	return withBasesLock(spec.BasesDir, func() error {
		chain, err := stack(spec.BasesDir, spec.BaseTree)
		if err != nil {
			return err
		}
		if len(chain) == 0 {
			if err := exportBase(spec); err != nil {
				return err
			}
			if chain, err = stack(spec.BasesDir, spec.BaseTree); err != nil {
				return err
			}
		}
		for _, t := range chain {
			users := filepath.Join(basePath(spec.BasesDir, t), "users")
			if err := os.MkdirAll(users, 0o700); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(users, spec.ID), nil, 0o600); err != nil {
				return err
			}
		}
		return nil
	})
}

// exportBase writes the base into a temporary directory next to its final
// place, as a layer over the nearest exported base or else whole, and
// renames it into place. Leftovers of an export that crashed are removed
// first.
func exportBase(spec sandbox.Spec) error {
	stale, _ := filepath.Glob(filepath.Join(spec.BasesDir, ".tmp-*"))
	for _, s := range stale {
		removeAll(s)
	}
	tmp, err := os.MkdirTemp(spec.BasesDir, ".tmp-"+spec.BaseTree+"-")
	if err != nil {
		return err
	}
	if err := exportInto(spec, tmp); err != nil {
		removeAll(tmp)
		return fmt.Errorf("export base %s: %w", spec.BaseTree[:12], err)
	}
	if err := os.Rename(tmp, basePath(spec.BasesDir, spec.BaseTree)); err != nil {
		removeAll(tmp)
		return err
	}
	return nil
}

func exportInto(spec sandbox.Spec, tmp string) error {
	if from := nearestBase(spec); from != "" {
		layer := filepath.Join(tmp, "layer")
		if err := os.Mkdir(layer, 0o755); err != nil {
			return err
		}
		if err := spec.ExportLayer(from, layer, overlayMarks{}); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(tmp, "parent"), []byte(from+"\n"), 0o600)
	}
	tree := filepath.Join(tmp, "tree")
	if err := os.Mkdir(tree, 0o755); err != nil {
		return err
	}
	return spec.ExportBase(tree)
}

// nearestBase is the exported base that differs from spec's base tree in
// the fewest paths, or "" when there is none, when spec cannot export
// layers, or when the nearest is a stack maxStack deep: then the tree is
// exported whole, which flattens the stack for the trees after it.
func nearestBase(spec sandbox.Spec) string {
	if spec.ExportLayer == nil || spec.Distance == nil {
		return ""
	}
	entries, _ := os.ReadDir(spec.BasesDir)
	best, bestDistance, bestDepth := "", 0, 0
	for _, e := range entries {
		if !validTree(e.Name()) {
			continue
		}
		chain, err := stack(spec.BasesDir, e.Name())
		if err != nil || len(chain) == 0 {
			continue
		}
		d, err := spec.Distance(e.Name())
		if err == nil && (best == "" || d < bestDistance) {
			best, bestDistance, bestDepth = e.Name(), d, len(chain)
		}
	}
	if bestDepth >= maxStack {
		return ""
	}
	return best
}

// overlayMarks makes whiteouts and opaque directories as overlayfs reads
// them in a lower layer of a mount with userxattr (the sandbox's, made in
// a user namespace): a character device 0/0, which Linux lets any user
// make, and the user.overlay.opaque xattr.
type overlayMarks struct{}

func (overlayMarks) Whiteout(path string) error {
	return unix.Mknod(path, unix.S_IFCHR, 0)
}

func (overlayMarks) Opaque(path string) error {
	return unix.Lsetxattr(path, "user.overlay.opaque", []byte("y"), 0)
}

// releaseBase drops spec's lease from the users of its base and of every
// base under it. The bases stay (see EvictBases). Releasing twice, or a
// base that is gone, is harmless.
func releaseBase(spec sandbox.Spec) error {
	if !validTree(spec.BaseTree) {
		return nil
	}
	return withBasesLock(spec.BasesDir, func() error {
		chain, err := stack(spec.BasesDir, spec.BaseTree)
		if err != nil {
			return err
		}
		for _, t := range chain {
			err := os.Remove(filepath.Join(basePath(spec.BasesDir, t), "users", spec.ID))
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		return nil
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
