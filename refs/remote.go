package refs

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// Leases travel between clones with ordinary git push and fetch. Push sends
// refs/leases/<id>, refs/heads/lease/<id> and refs/notes/leases under the
// same names and never forces. Fetch keeps what a remote has apart, under
// refs/remotes/<remote>/ (leases/<id>, lease/<id>, notes/leases), and then
// integrates it into the local refs without overwriting local work (see
// FetchLeases).

var (
	// ErrBadRemote is returned for a remote argument git-lease will not pass
	// to git: an option ("-…"), a relative path, a name that is not a
	// configured remote, or, where fetched refs must be kept under a name, a
	// URL or path.
	ErrBadRemote = errors.New("not a usable remote")
	// ErrPushRejected is returned when the remote refused at least one ref of
	// a push. The push is atomic, so the remote took none of them.
	ErrPushRejected = errors.New("the remote refused the push, so nothing was pushed: run git lease fetch to integrate what the remote has, then push again, or read the remote's reason")
)

// PushLeases pushes the logs and review branches of ids (every ref under
// refs/leases/ and refs/heads/lease/ when ids is empty) and
// refs/notes/leases and RevocationsRef, when they exist, to remote in one atomic push: the
// remote takes all of them or none. It never forces, so a remote whose log,
// branch or notes moved on refuses with ErrPushRejected, followed by git's
// reason lines, including the "remote: …" lines of the remote's hooks. The
// local pre-push hook does not run; the remote's hooks do. A lease in ids
// without a log fails with ErrNoLease before anything is sent; a lease
// without a branch sends its log alone. Pushing what the remote already has
// changes nothing, so the call is idempotent.
func (r *Repo) PushLeases(ctx context.Context, remote string, ids []ID) error {
	if err := r.checkRemote(ctx, remote, false); err != nil {
		return err
	}
	specs, err := r.pushSpecs(ids)
	if err != nil {
		return err
	}
	args := []string{"push", "--atomic", "--no-verify", "--no-recurse-submodules", "--no-follow-tags", "--end-of-options", remote}
	if _, err := r.remoteGit(ctx, append(args, specs...)...); err != nil {
		return remoteFailure("push to "+remote, err)
	}
	return nil
}

// pushSpecs lists non-forcing refspecs that push each ref under its own name.
func (r *Repo) pushSpecs(ids []ID) ([]string, error) {
	specs := []string{"refs/leases/*:refs/leases/*", "refs/heads/lease/*:refs/heads/lease/*"}
	if len(ids) > 0 {
		specs = nil
	}
	for _, id := range ids {
		if _, err := ParseID(string(id)); err != nil {
			return nil, err
		}
		if _, err := r.LogTip(id); err != nil {
			return nil, err
		}
		specs = append(specs, id.LogRef()+":"+id.LogRef())
		branch, err := r.Ref(id.BranchRef())
		if err != nil {
			return nil, err
		}
		if !branch.IsZero() {
			specs = append(specs, id.BranchRef()+":"+id.BranchRef())
		}
	}
	for _, name := range []string{NotesRef, RevocationsRef} {
		h, err := r.Ref(name)
		if err != nil {
			return nil, err
		}
		if !h.IsZero() {
			specs = append(specs, name+":"+name)
		}
	}
	return specs, nil
}

// RemoteLeaseIDs lists, sorted, the IDs of the lease logs that the last
// FetchLeases from remote found there (refs/remotes/<remote>/leases/<id>).
// A remote never fetched from has none, and so does one after a plain
// `git fetch --prune`, which deletes these refs because the remote has no
// branch of that name: fetch with FetchLeases first. remote must be a
// configured remote name (ErrBadRemote otherwise). It reads local refs only
// and lists names: whether each is a readable log is the caller's to check.
func (r *Repo) RemoteLeaseIDs(remote string) ([]ID, error) {
	if err := r.checkRemote(context.Background(), remote, true); err != nil {
		return nil, err
	}
	refs, err := r.RefsWithPrefix(trackingPrefix(remote) + "leases/")
	if err != nil {
		return nil, err
	}
	var ids []ID
	for name := range refs {
		if id, err := ParseID(strings.TrimPrefix(name, trackingPrefix(remote)+"leases/")); err == nil {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, nil
}

// trackingPrefix is where fetch keeps what remote has.
func trackingPrefix(remote string) string { return "refs/remotes/" + remote + "/" }

// checkRemote accepts a configured remote name and, unless nameOnly, a URL
// ("scheme://…" or scp-like "host:path") or an absolute path. It refuses
// anything git could read as an option, relative paths (a bare word is
// more likely a mistyped remote name; configure the path as a remote
// instead), control characters, and names that cannot be part of a ref
// name.
func (r *Repo) checkRemote(ctx context.Context, remote string, nameOnly bool) error {
	const give = "give the name of a configured remote (see git remote -v)"
	bad := remote == "" || strings.HasPrefix(remote, "-") ||
		strings.ContainsFunc(remote, func(c rune) bool { return c < 0x20 || c == 0x7f })
	if !bad {
		out, err := r.Git(ctx, nil, "remote")
		if err != nil {
			return err
		}
		colon, slash := strings.Index(remote, ":"), strings.Index(remote, "/")
		switch {
		case slices.Contains(strings.Split(string(out), "\n"), remote):
			if plumbing.ReferenceName(trackingPrefix(remote)+"leases/x").Validate() != nil {
				return fmt.Errorf("%q: %w: its name cannot be part of a ref name; rename it with git remote rename", remote, ErrBadRemote)
			}
			return nil
		case nameOnly:
			return fmt.Errorf("%q: %w: %s; fetched leases are kept per remote name, so name a URL first with git remote add NAME URL", remote, ErrBadRemote, give)
		case strings.Contains(remote, "://") || filepath.IsAbs(remote) || colon > 0 && (slash < 0 || colon < slash):
			return nil
		}
	}
	return fmt.Errorf("%q: %w: %s, a URL or an absolute path", remote, ErrBadRemote, give)
}

// remoteFailure turns a failed push or fetch into an error that carries
// git's reasons: the remote's own "remote: …" lines and the " ! " status
// line of each refused ref, or else everything git said but its hints.
func remoteFailure(op string, err error) error {
	var ge *GitError
	if !errors.As(err, &ge) {
		return fmt.Errorf("%s: %w", op, err)
	}
	var reasons, rest []string
	for _, line := range strings.Split(ge.Stderr, "\n") {
		line = strings.TrimRight(line, " \t\r")
		switch {
		case strings.HasPrefix(line, "remote:"), strings.HasPrefix(line, " ! "):
			reasons = append(reasons, "  "+strings.TrimSpace(line))
		case line != "" && !strings.HasPrefix(line, "hint:"):
			rest = append(rest, "  "+line)
		}
	}
	if len(reasons) == 0 {
		reasons = rest
	}
	if strings.Contains(ge.Stderr, "[rejected]") || strings.Contains(ge.Stderr, "[remote rejected]") {
		return fmt.Errorf("%s: %w:\n%s", op, ErrPushRejected, strings.Join(reasons, "\n"))
	}
	return fmt.Errorf("%s failed (%w):\n%s", op, ge.Err, strings.Join(reasons, "\n"))
}
