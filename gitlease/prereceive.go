package gitlease

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/verify"
)

var (
	// ErrPushRefused is returned by PreReceive when it refused a pushed ref,
	// after writing the reasons.
	ErrPushRefused = errors.New("push refused: lease evidence must verify on the server (reasons above); the server took nothing")
	// ErrNoServerSigners is the reason a server without an allowed-signers
	// file refuses every lease.
	ErrNoServerSigners = errors.New("this server has no allowed signers, so it cannot verify a lease: in its repository, git config lease.allowedSignersFile /absolute/path/to/allowed_signers")
)

// PreReceive is the pre-receive hook of a shared repository, run by git with
// the pushed ref updates as input in dir (the hook's working directory) and
// environ (its environment: the push is quarantined). For each refused ref it
// writes one or more lines "git-lease: <ref>: <reason>" to reasons (the
// pusher sees them as "remote: …") and then fails with ErrPushRefused, so
// that git takes none of the push. It refuses:
//
//   - under refs/leases/: a name that is not a lease ID, a deletion, an
//     update whose old tip is not an ancestor of the new one (creating a log
//     is fine), and a new tip that VerifyLease finds fault with, against the
//     server's allowed signers (lease.allowedSignersFile, else
//     gpg.ssh.allowedSignersFile; never the key of the user the server runs
//     as), with the review branch where the push leaves it (else where the
//     server has it);
//   - refs/heads/lease/<id> pushed without its log: unless the server has
//     that log and it verifies with the branch at the pushed commit (the
//     lease's result, or its base). Deleting a review branch is fine: the
//     log stays;
//   - refs/notes/leases, refs/lease-revocations/log and refs/lease-gates/*
//     (checkPushedShared): a deletion, an update that drops the server's
//     tip, a new commit not signed by an allowed key, a revocation or gate
//     record that does not read, and a note that is not a result receipt
//     signed by an allowed key about the commit it annotates.
//
// Other refs pass, and a push without lease refs opens nothing. It writes
// nothing to the repository.
func PreReceive(ctx context.Context, dir string, environ []string, input io.Reader, reasons io.Writer) error {
	lines, err := readRefLines(input)
	if err != nil {
		return err
	}
	pushed := map[string]refs.RefUpdate{}
	var updates []refs.RefUpdate
	for _, l := range lines {
		oldOID, okOld := parseOID(l.Old)
		newOID, okNew := parseOID(l.New)
		if !okOld || !okNew {
			return fmt.Errorf("pre-receive input %q: want \"<old> <new> <ref>\" with 40-hex object names", l.Old+" "+l.New+" "+l.Name)
		}
		u := refs.RefUpdate{Name: l.Name, Old: oldOID, New: newOID}
		if strings.HasPrefix(u.Name, "refs/leases/") || reviewBranch(u.Name) != "" || sharedRef(u.Name) {
			pushed[u.Name] = u
			updates = append(updates, u)
		}
	}
	if len(updates) == 0 {
		return nil
	}
	repo, done, err := refs.OpenReceiving(dir, environ)
	if err != nil {
		return err
	}
	defer done()
	allowed, signersErr := serverSigners(repo)
	refused := false
	for _, u := range updates {
		refuse := func(format string, args ...any) {
			fmt.Fprintf(reasons, "git-lease: %s: %s\n", u.Name, fmt.Sprintf(format, args...))
			refused = true
		}
		if signersErr != nil {
			refuse("%v", signersErr)
			continue
		}
		if name, ok := strings.CutPrefix(u.Name, "refs/leases/"); ok {
			checkPushedLog(ctx, repo, name, u, pushed, allowed, refuse)
		} else if sharedRef(u.Name) {
			checkPushedShared(ctx, repo, u, allowed, refuse)
		} else {
			checkPushedBranch(ctx, repo, reviewBranch(u.Name), u, pushed, allowed, refuse)
		}
	}
	if refused {
		return ErrPushRefused
	}
	return nil
}

// checkPushedLog checks a pushed refs/leases/<name>.
func checkPushedLog(ctx context.Context, repo *refs.Repo, name string, u refs.RefUpdate, pushed map[string]refs.RefUpdate,
	allowed *verify.AllowedSigners, refuse func(string, ...any)) {
	id, err := refs.ParseID(name)
	switch {
	case err != nil:
		refuse("not a lease log: refs/leases/ holds only logs named by a lease ID (12 lowercase hex)")
		return
	case u.New.IsZero():
		refuse("deleting a lease log is refused: the log is the lease's evidence, and it only grows")
		return
	case !u.Old.IsZero() && !extends(repo, u.New, u.Old):
		refuse("%s is not a fast-forward of the server's %s: a lease log only grows, so a rewritten log is refused (git lease fetch shows how the logs differ)",
			short(u.New), short(u.Old))
	}
	branch, ok := pushed[id.BranchRef()]
	if !ok {
		if branch.New, err = repo.Ref(id.BranchRef()); err != nil {
			refuse("%v", err)
			return
		}
	}
	for _, p := range VerifyLease(ctx, repo, id, u.New, branch.New, allowed).Problems {
		refuse("%s", p)
	}
}

// checkPushedBranch checks a review branch pushed without its log.
func checkPushedBranch(ctx context.Context, repo *refs.Repo, id refs.ID, u refs.RefUpdate, pushed map[string]refs.RefUpdate,
	allowed *verify.AllowedSigners, refuse func(string, ...any)) {
	if _, withLog := pushed[id.LogRef()]; withLog || u.New.IsZero() {
		return
	}
	tip, err := repo.Ref(id.LogRef())
	switch {
	case err != nil:
		refuse("%v", err)
	case tip.IsZero():
		refuse("the server has no lease log %s for this review branch: push them together (git lease push)", id.LogRef())
	default:
		for _, p := range VerifyLease(ctx, repo, id, tip, u.New, allowed).Problems {
			refuse("%s", p)
		}
	}
}

// serverSigners reads the server's allowed signers, which must be named.
func serverSigners(repo *refs.Repo) (*verify.AllowedSigners, error) {
	file := gitConfig(repo, "lease.allowedSignersFile")
	if file == "" {
		file = gitConfig(repo, "gpg.ssh.allowedSignersFile")
	}
	if file == "" {
		return nil, ErrNoServerSigners
	}
	return AllowedSigners(repo, file, false)
}

// extends reports whether old is on tip's log (a fast-forward).
func extends(repo *refs.Repo, tip, old plumbing.Hash) bool {
	entries, err := repo.Log(tip)
	for _, e := range entries {
		if e.Commit == old {
			return err == nil
		}
	}
	return false
}

// reviewBranch returns the lease whose review branch ref is, or "" when it
// is not one (lease/<id>-edits is an ordinary branch).
func reviewBranch(ref string) refs.ID {
	id, err := refs.ParseID(strings.TrimPrefix(ref, "refs/heads/lease/"))
	if err != nil || !strings.HasPrefix(ref, "refs/heads/lease/") {
		return ""
	}
	return id
}

// parseOID accepts a full 40-hex object name.
func parseOID(s string) (plumbing.Hash, bool) {
	if len(s) != 40 || strings.Trim(s, "0123456789abcdef") != "" {
		return plumbing.ZeroHash, false
	}
	return plumbing.NewHash(s), true
}

func short(h plumbing.Hash) string { return h.String()[:12] }
