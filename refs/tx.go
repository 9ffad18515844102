package refs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// ErrStale is returned when a ref is no longer where the caller last saw it:
// someone else wrote first. Nothing was changed; read again and retry.
var ErrStale = errors.New("ref changed since it was read")

// RefUpdate is one compare-and-swap step of a transaction. Old is the value
// the ref must have now (plumbing.ZeroHash: it must not exist). New is the
// value to set (plumbing.ZeroHash: delete). Verify-only steps set Verify.
type RefUpdate struct {
	Name   string
	Old    plumbing.Hash
	New    plumbing.Hash
	Verify bool
}

// Update applies all updates atomically with `git update-ref --stdin`:
// either every ref moves or none does. A ref that is not at its Old value
// fails the whole transaction with ErrStale.
func (r *Repo) Update(ctx context.Context, reason string, updates ...RefUpdate) error {
	var b strings.Builder
	b.WriteString("start\n")
	for _, u := range updates {
		if err := checkRefName(u.Name); err != nil {
			return err
		}
		switch {
		case u.Verify:
			fmt.Fprintf(&b, "verify %s %s\n", u.Name, u.Old)
		case u.New.IsZero():
			fmt.Fprintf(&b, "delete %s %s\n", u.Name, u.Old)
		default:
			fmt.Fprintf(&b, "update %s %s %s\n", u.Name, u.New, u.Old)
		}
	}
	b.WriteString("prepare\ncommit\n")
	_, err := r.Git(ctx, []byte(b.String()), "update-ref", "-m", reason, "--stdin")
	if err == nil {
		return nil
	}
	var ge *GitError
	if errors.As(err, &ge) && isStaleMessage(ge.Stderr) {
		return fmt.Errorf("%w: %s", ErrStale, firstLine(ge.Stderr, err))
	}
	return err
}

func isStaleMessage(s string) bool {
	for _, m := range []string{"but expected", "reference already exists", "unable to resolve reference", "is at", "cannot lock ref"} {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

// checkRefName refuses names outside the namespaces git-lease writes, so that
// no caller can be tricked into writing elsewhere.
func checkRefName(name string) error {
	if name == RevocationsRef {
		return nil
	}
	for _, prefix := range []string{"refs/leases/", "refs/lease-gates/", "refs/heads/", "refs/notes/", "refs/remotes/"} {
		if strings.HasPrefix(name, prefix) && plumbing.ReferenceName(name).Validate() == nil {
			return nil
		}
	}
	return fmt.Errorf("refusing to write ref %q", name)
}

// Ref returns the hash a ref points at, or plumbing.ZeroHash when it does not exist.
func (r *Repo) Ref(name string) (plumbing.Hash, error) {
	ref, err := r.store.Reference(plumbing.ReferenceName(name))
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if ref.Type() == plumbing.SymbolicReference {
		ref, err = r.git.Reference(ref.Name(), true)
		if err != nil {
			return plumbing.ZeroHash, err
		}
	}
	return ref.Hash(), nil
}

// RefsWithPrefix lists refs under prefix with their hashes, from loose and
// packed refs. It asks git (for-each-ref): go-git's own listing reads a
// ref's lock file too, and fails on one that another process has just
// created empty.
func (r *Repo) RefsWithPrefix(prefix string) (map[string]plumbing.Hash, error) {
	out, err := r.Git(context.Background(), nil, "for-each-ref", "--format=%(objectname) %(refname)", "--", prefix)
	if err != nil {
		return nil, err
	}
	refs := map[string]plumbing.Hash{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if hash, name, ok := strings.Cut(line, " "); ok && strings.HasPrefix(name, prefix) {
			refs[name] = plumbing.NewHash(hash)
		}
	}
	return refs, nil
}
