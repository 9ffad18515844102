package refs

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// FetchReport says what FetchLeases did with each fetched ref, in ref-name
// order. Name is always the local ref.
type FetchReport struct {
	// Created were missing locally and now point where the remote's do.
	Created []RefState
	// FastForwarded were behind the remote's and moved forward to them.
	FastForwarded []RefState
	// UpToDate already were the remote's, or contained them (a push would
	// send the rest).
	UpToDate []RefState
	// Diverged and the remote's have each moved on: left at Local, never
	// overwritten. Look at both and decide (git log Local...Remote). Notes
	// never diverge: they are merged (NotesMerged).
	Diverged []RefState
	// Skipped are fetched refs that were not integrated, with the reason.
	Skipped []SkippedRef
	// NotesMerged is set when local and fetched refs/notes/leases had both
	// moved on and were merged into a new commit holding the notes of both
	// (see SplitNote).
	NotesMerged bool
}

// RefState is a local ref next to the fetched ref it was compared with.
type RefState struct {
	Name   string        // the local ref, e.g. refs/leases/<id>
	Local  plumbing.Hash // where it was before the fetch; zero: it did not exist
	Remote plumbing.Hash // where the remote's is
}

// SkippedRef is a fetched ref, under refs/remotes/<remote>/, that FetchLeases
// left alone.
type SkippedRef struct {
	Name   string
	Reason string
}

// FetchLeases fetches the remote's lease logs, review branches and notes
// into refs/remotes/<remote>/{leases,lease,notes/leases}, which mirror the
// remote: the fetch overwrites them, and deletes those the remote no longer
// has (local leases are never deleted). remote must be a configured remote
// name (ErrBadRemote otherwise); a remote without notes is fine.
//
// It then integrates, in one transaction of compare-and-swap updates: a log
// or branch missing locally is created, one behind the remote's is fast-
// forwarded, one ahead of it is left, and one that diverged from it is
// reported and never overwritten. A branch checked out in a worktree is not
// moved. Fetched names that are not lease IDs, and refs that are not
// commits, are skipped. Notes are merged so that nothing is lost (see
// SplitNote). If a local ref moves meanwhile, nothing is integrated and the
// error wraps ErrStale: run it again. Running it again changes nothing new.
func (r *Repo) FetchLeases(ctx context.Context, remote string) (*FetchReport, error) {
	return r.FetchLeasesChecked(ctx, remote, nil)
}

// FetchLeasesChecked is FetchLeases that first reads each fetched log with
// check (when not nil): a log check refuses is kept out of refs/leases/,
// with its review branch, and listed in Skipped with check's one-line
// reason; it stays under refs/remotes/<remote>/leases/ for a look.
func (r *Repo) FetchLeasesChecked(ctx context.Context, remote string, check func(ID, plumbing.Hash) error) (*FetchReport, error) {
	if err := r.checkRemote(ctx, remote, true); err != nil {
		return nil, err
	}
	if err := r.fetchTracking(ctx, remote); err != nil {
		return nil, err
	}
	checkedOut, err := r.CheckedOut(ctx)
	if err != nil {
		return nil, err
	}
	rep := &FetchReport{}
	var updates []RefUpdate
	prefix := trackingPrefix(remote)
	refused := map[ID]string{}
	if check != nil {
		logs, err := r.RefsWithPrefix(prefix + "leases/")
		if err != nil {
			return nil, err
		}
		for name, tip := range logs {
			id, err := ParseID(strings.TrimPrefix(name, prefix+"leases/"))
			if err != nil {
				continue
			}
			if _, err := r.Commit(tip); err != nil {
				continue // skipped below as not a commit
			}
			if err := check(id, tip); err != nil {
				refused[id] = strings.ReplaceAll(err.Error(), "\n", " ")
			}
		}
	}
	for _, ns := range []struct{ tracking, local string }{{prefix + "lease/", "refs/heads/lease/"}, {prefix + "leases/", "refs/leases/"}} {
		fetched, err := r.RefsWithPrefix(ns.tracking)
		if err != nil {
			return nil, err
		}
		names := make([]string, 0, len(fetched))
		for name := range fetched {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			id, err := ParseID(strings.TrimPrefix(name, ns.tracking))
			if err != nil {
				rep.Skipped = append(rep.Skipped, SkippedRef{name, "not a lease ID"})
				continue
			}
			if _, err := r.Commit(fetched[name]); err != nil {
				rep.Skipped = append(rep.Skipped, SkippedRef{name, "not a commit"})
				continue
			}
			if why, ok := refused[id]; ok {
				if ns.local == "refs/leases/" {
					rep.Skipped = append(rep.Skipped, SkippedRef{name, "kept out: " + why})
				} else {
					rep.Skipped = append(rep.Skipped, SkippedRef{name, "its lease log was kept out"})
				}
				continue
			}
			local := ns.local + string(id)
			out, st, err := r.compareFetched(ctx, local, fetched[name])
			if err != nil {
				return nil, err
			}
			if (out == fetchCreate || out == fetchFastForward) && checkedOut[local] != "" {
				rep.Skipped = append(rep.Skipped, SkippedRef{name, "its branch is checked out in a worktree: update it there with git merge --ff-only " + name})
				continue
			}
			updates = rep.record(out, st, updates)
		}
	}
	updates, err = r.integrateNotes(ctx, remote, rep, updates)
	if err != nil {
		return nil, err
	}
	if updates, err = r.integrateRevocations(ctx, remote, rep, updates); err != nil {
		return nil, err
	}
	if len(updates) > 0 {
		if err := r.Update(ctx, "git lease fetch "+remote, updates...); err != nil {
			return nil, fmt.Errorf("fetch from %s: nothing was integrated: %w", remote, err)
		}
	}
	return rep, nil
}

// fetchTracking fetches into refs/remotes/<remote>/ with --prune. A remote
// without refs/notes/leases makes git fail with "couldn't find remote ref":
// fetch again without it, and drop the stale remote-tracking notes.
func (r *Repo) fetchTracking(ctx context.Context, remote string) error {
	prefix := trackingPrefix(remote)
	args := []string{"fetch", "--atomic", "--prune", "--no-tags", "--no-recurse-submodules", "--no-write-fetch-head",
		"--refmap=", "--end-of-options", remote,
		"+refs/leases/*:" + prefix + "leases/*", "+refs/heads/lease/*:" + prefix + "lease/*",
		// A pattern, so that a remote without revocations is no error.
		"+refs/lease-revocations/*:" + prefix + "lease-revocations/*"}
	_, err := r.remoteGit(ctx, append(args, "+"+NotesRef+":"+prefix+"notes/leases")...)
	var ge *GitError
	if err == nil || !errors.As(err, &ge) || !strings.Contains(ge.Stderr, "couldn't find remote ref "+NotesRef) {
		if err != nil {
			return remoteFailure("fetch from "+remote, err)
		}
		return nil
	}
	if _, err := r.remoteGit(ctx, args...); err != nil {
		return remoteFailure("fetch from "+remote, err)
	}
	stale, err := r.Ref(prefix + "notes/leases")
	if err != nil || stale.IsZero() {
		return err
	}
	return r.Update(ctx, "git lease fetch "+remote+": the remote has no notes", RefUpdate{Name: prefix + "notes/leases", Old: stale})
}

// fetchOutcome is how a local ref relates to the fetched one.
type fetchOutcome int

const (
	fetchCreate fetchOutcome = iota
	fetchFastForward
	fetchUpToDate
	fetchDiverged
)

// compareFetched compares the local ref name with the fetched commit.
func (r *Repo) compareFetched(ctx context.Context, name string, fetched plumbing.Hash) (fetchOutcome, RefState, error) {
	local, err := r.Ref(name)
	st := RefState{Name: name, Local: local, Remote: fetched}
	switch {
	case err != nil:
		return 0, st, err
	case local.IsZero():
		return fetchCreate, st, nil
	case local == fetched:
		return fetchUpToDate, st, nil
	}
	for _, c := range []struct {
		a, b plumbing.Hash
		out  fetchOutcome
	}{{local, fetched, fetchFastForward}, {fetched, local, fetchUpToDate}} {
		ancestor, err := r.IsAncestor(ctx, c.a, c.b)
		if err != nil {
			return 0, st, err
		}
		if ancestor {
			return c.out, st, nil
		}
	}
	return fetchDiverged, st, nil
}

// IsAncestor reports whether a is b or one of its ancestors.
func (r *Repo) IsAncestor(ctx context.Context, a, b plumbing.Hash) (bool, error) {
	_, err := r.Git(ctx, nil, "merge-base", "--is-ancestor", a.String(), b.String())
	var ee *exec.ExitError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &ee) && ee.ExitCode() == 1:
		return false, nil
	}
	return false, err
}

// record adds st to the report under out and returns updates with the
// compare-and-swap that out needs, if any.
func (rep *FetchReport) record(out fetchOutcome, st RefState, updates []RefUpdate) []RefUpdate {
	switch out {
	case fetchCreate:
		rep.Created = append(rep.Created, st)
	case fetchFastForward:
		rep.FastForwarded = append(rep.FastForwarded, st)
	case fetchUpToDate:
		rep.UpToDate = append(rep.UpToDate, st)
		return updates
	default:
		rep.Diverged = append(rep.Diverged, st)
		return updates
	}
	return append(updates, RefUpdate{Name: st.Name, Old: st.Local, New: st.Remote})
}

// fetchedTip is what the fetch brought for ref, under remote's tracking
// prefix: zero when nothing came, or when it is not a commit (then rep
// lists it as skipped).
func (r *Repo) fetchedTip(remote, ref string, rep *FetchReport) (plumbing.Hash, error) {
	tracking := trackingPrefix(remote) + strings.TrimPrefix(ref, "refs/")
	fetched, err := r.Ref(tracking)
	if err != nil || fetched.IsZero() {
		return plumbing.ZeroHash, err
	}
	if _, err := r.Commit(fetched); err != nil {
		rep.Skipped = append(rep.Skipped, SkippedRef{tracking, "not a commit"})
		return plumbing.ZeroHash, nil
	}
	return fetched, nil
}

// integrateRevocations adds the fetched RevocationsRef to rep and updates
// like a lease log: created, fast-forwarded, or reported as diverged and
// left. Whether its decisions verify is checked where they are read.
func (r *Repo) integrateRevocations(ctx context.Context, remote string, rep *FetchReport, updates []RefUpdate) ([]RefUpdate, error) {
	fetched, err := r.fetchedTip(remote, RevocationsRef, rep)
	if err != nil || fetched.IsZero() {
		return updates, err
	}
	out, st, err := r.compareFetched(ctx, RevocationsRef, fetched)
	if err != nil {
		return nil, err
	}
	return rep.record(out, st, updates), nil
}
