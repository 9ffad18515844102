// Package worktree is the trusted_local provider: the agent runs as the
// user, with the user's environment, directly in the lease's review worktree.
// It is not a security boundary and says so.
package worktree

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/git-lease/git-lease/sandbox"
)

// Provider runs agents in the review worktree.
type Provider struct{}

// Name is "worktree".
func (Provider) Name() sandbox.ProviderName { return sandbox.Worktree }

// Sandboxed is false: nothing separates the agent from the user's account.
func (Provider) Sandboxed() bool { return false }

// Check succeeds: the worktree provider needs nothing.
func (Provider) Check() error { return nil }

// Create does nothing: the review worktree is the workspace.
func (Provider) Create(context.Context, sandbox.Spec) error { return nil }

// Launch prepares the command to run in the review worktree with the user's
// environment plus cmd.Env; it starts at Release. Only the wall-time and
// output bounds apply: nothing else can be enforced without a sandbox.
// Shared files are given as their host paths.
func (Provider) Launch(ctx context.Context, spec sandbox.Spec, cmd sandbox.Command) (sandbox.Process, error) {
	c := exec.Command(cmd.Argv[0], cmd.Argv[1:]...)
	c.Dir = filepath.Join(spec.Worktree, filepath.FromSlash(cmd.Dir))
	c.Env = append(os.Environ(), cmd.Env...)
	for _, b := range spec.Binds {
		c.Env = replacePath(c.Env, b)
	}
	return sandbox.NewProc(ctx, c, spec.Limits, cmd, "none (trusted_local: wall time and output only)")
}

// replacePath points environment values naming a bind's sandbox path at
// its host path instead.
func replacePath(env []string, b sandbox.Bind) []string {
	for i, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && v == b.Sandbox {
			env[i] = k + "=" + b.Host
		}
	}
	return env
}

// Delta is the whole review worktree.
func (Provider) Delta(spec sandbox.Spec) (sandbox.Delta, error) {
	return sandbox.Delta{Root: spec.Worktree, Layout: sandbox.Full}, nil
}

// Discard does nothing: the review worktree belongs to the lease, and
// cleanup decides whether it may go.
func (Provider) Discard(context.Context, sandbox.Spec) error { return nil }
