// Package hooks installs git-lease's git hooks without clobbering the hooks
// a repository already has: a hook that is there is kept as <name>.chained
// and still runs, first, with the same arguments and input. The hooks only
// run `git-lease hook <name>`; what to refuse is decided there, not here.
package hooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The hooks this package installs.
const (
	// LocalHook guards refs/leases in a clone: it sees every ref update.
	LocalHook = "reference-transaction"
	// ServerHook verifies pushed leases on a server (a bare repository).
	ServerHook = "pre-receive"
)

var (
	// ErrNotExecutable is returned when the hook in place is not a regular
	// executable file, so chaining it would change what runs.
	ErrNotExecutable = errors.New("the hook in place is not a regular executable file: make it one (chmod +x) or remove it, then install again")
	// ErrChainedExists is returned when <name>.chained exists and differs
	// from the hook in place, so one of them would be lost.
	ErrChainedExists = errors.New("a different chained hook already exists: merge the two by hand or remove one, then install again")
	// ErrNotOurs is returned by Uninstall when the hook in place is not
	// git-lease's but a chained hook exists, so it cannot tell which to keep.
	ErrNotOurs = errors.New("the hook in place is not git-lease's, but a chained hook exists: keep one by hand")
)

// Options says where and what to install.
type Options struct {
	// GitDir is the repository's git directory (its common directory for a
	// linked worktree); hooks go into GitDir/hooks unless HooksDir is set.
	GitDir string
	// HooksDir is where git looks for hooks, when the caller found
	// core.hooksPath set (`git rev-parse --git-path hooks` says where).
	HooksDir string
	// Server installs ServerHook rather than LocalHook.
	Server bool
	// Command is what the hook runs with `hook <name>` and the hook's
	// arguments: a program name looked up on PATH when the hook runs (such
	// as "git-lease"), or an absolute path.
	Command string
}

// Installed says what Install did.
type Installed struct {
	// Hook is the path of the installed hook.
	Hook string
	// Chained is the path of the hook it runs first, or "" when there is none.
	Chained string
	// Changed is false when the same hook was already installed.
	Changed bool
}

// name returns the hook's name and path, checking the options.
func (o Options) name() (name, path string, err error) {
	dir := o.HooksDir
	if dir == "" {
		dir = filepath.Join(o.GitDir, "hooks")
	}
	switch {
	case !filepath.IsAbs(dir):
		return "", "", fmt.Errorf("hooks directory %q: give an absolute path", dir)
	case o.Command == "" || strings.ContainsFunc(o.Command, func(c rune) bool { return c < 0x20 || c == 0x7f }):
		return "", "", fmt.Errorf("hook command %q: give a program name or an absolute path", o.Command)
	case strings.Contains(o.Command, "/") && !filepath.IsAbs(o.Command):
		return "", "", fmt.Errorf("hook command %q: a relative path would be resolved wherever git runs the hook; give an absolute path", o.Command)
	}
	name = LocalHook
	if o.Server {
		name = ServerHook
	}
	return name, filepath.Join(dir, name), nil
}

// Install installs the hook that runs Command, creating the hooks directory
// if it is missing. A hook that is already there and is not git-lease's is
// kept as <name>.chained and runs first; Install refuses (ErrNotExecutable,
// ErrChainedExists) when that could lose or change a hook. Installing again
// is idempotent: git-lease's own hook is recognised and rewritten only when
// it differs (another Command, a newer script).
func Install(ctx context.Context, opts Options) (*Installed, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	name, path, err := opts.name()
	if err != nil {
		return nil, err
	}
	want := script(name, opts.Command)
	chained := path + ".chained"
	inst := &Installed{Hook: path}
	if _, err := os.Lstat(chained); err == nil {
		inst.Chained = chained
	}
	current, err := readHook(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, err
	case bytes.Equal(current, want):
		return inst, nil
	case isOurs(current):
	case inst.Chained != "":
		if old, err := readHook(chained); err != nil || !bytes.Equal(old, current) {
			return nil, fmt.Errorf("%s and %s: %w", path, chained, ErrChainedExists)
		}
	default:
		if err := os.Link(path, chained); err != nil {
			return nil, fmt.Errorf("keep the existing hook: %w", err)
		}
		inst.Chained = chained
	}
	if err := writeHook(path, want); err != nil {
		return nil, err
	}
	inst.Changed = true
	return inst, nil
}

// Uninstall removes git-lease's hook and puts back the hook it chained, if
// any. It is idempotent: with no git-lease hook in place it changes nothing,
// unless the hook is missing and a chained hook was left behind, which is
// put back. A hook that is not git-lease's, with a chained hook next to it,
// fails with ErrNotOurs.
func Uninstall(ctx context.Context, opts Options) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	_, path, err := opts.name()
	if err != nil {
		return err
	}
	chained := path + ".chained"
	_, err = os.Lstat(chained)
	hasChained := err == nil
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		if hasChained {
			return os.Rename(chained, path)
		}
		return nil
	}
	current, err := os.ReadFile(path)
	switch {
	case err != nil:
		return err
	case !isOurs(current) && hasChained:
		return fmt.Errorf("%s: %w", path, ErrNotOurs)
	case !isOurs(current):
		return nil
	case hasChained:
		return os.Rename(chained, path)
	}
	return os.Remove(path)
}

// readHook returns the content of the hook at path (following a symlink),
// or ErrNotExecutable when git would not run it as it is.
func readHook(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		if _, lerr := os.Lstat(path); lerr == nil {
			return nil, fmt.Errorf("%s: %w", path, ErrNotExecutable) // a dangling link
		}
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return nil, fmt.Errorf("%s: %w", path, ErrNotExecutable)
	}
	return os.ReadFile(path)
}

// writeHook replaces path with an executable file holding content, in one
// rename, so git never finds a half-written hook.
func writeHook(path string, content []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o755)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
