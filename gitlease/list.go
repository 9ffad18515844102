package gitlease

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/verify"
)

// Broken is a lease log whose newest entry this git-lease cannot read: a
// commit with no lease.json (a junk ref fetched from a server without the
// verifying hook), a record that does not parse, or one that names another
// lease. Listing leaves it out and names it, so one bad ref never stops a
// command about the others.
type Broken struct {
	ID     refs.ID `json:"id"`
	Log    string  `json:"log"`
	Reason string  `json:"reason"`
}

// List loads every readable lease of the repository, newest first. Logs it
// cannot read are left out: ListAll names them.
func List(repo *refs.Repo) ([]*Execution, error) {
	all, _, err := ListAll(repo)
	return all, err
}

// ListAll loads every readable lease of the repository, newest first, and
// names the logs it cannot read (by ID). A record written by a newer
// git-lease is readable, and loaded read-only (Execution.ReadOnly).
func ListAll(repo *refs.Repo) ([]*Execution, []Broken, error) {
	return listWhere(repo, func(State) bool { return true })
}

// listWhere loads the leases whose log says they are in a state keep
// accepts, newest first, and names those it cannot read.
func listWhere(repo *refs.Repo, keep func(State) bool) ([]*Execution, []Broken, error) {
	heads, err := repo.LogHeads()
	if err != nil {
		return nil, nil, err
	}
	out := make([]*Execution, 0, len(heads))
	var broken []Broken
	for _, h := range heads {
		if !keep(State(h.State)) {
			continue
		}
		x, err := LoadAt(repo, h.ID, h.Tip)
		if err != nil {
			broken = append(broken, Broken{ID: h.ID, Log: h.Tip.String(), Reason: brokenReason(h.ID, err)})
			continue
		}
		out = append(out, x)
	}
	newestFirst(out)
	return out, broken, nil
}

// brokenReason is err without the "lease <id>: " that LoadAt puts first.
func brokenReason(id refs.ID, err error) string {
	s := err.Error()
	if p := "lease " + string(id) + ": "; len(s) > len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}

// ListRemote loads the leases that the last git lease fetch from remote
// found there, from the fetched logs (refs/remotes/<remote>/leases/<id>),
// newest first, and names the fetched logs it cannot read. remote must be a
// configured remote name. A remote never fetched from has none, and so has
// one after a plain git fetch --prune, which deletes the fetched logs.
func ListRemote(repo *refs.Repo, remote string) ([]*Execution, []Broken, error) {
	ids, err := repo.RemoteLeaseIDs(remote)
	if err != nil {
		return nil, nil, err
	}
	out := make([]*Execution, 0, len(ids))
	var broken []Broken
	for _, id := range ids {
		tip, err := repo.Ref(refs.RemoteLogRef(remote, id))
		if err != nil {
			return nil, nil, err
		}
		x, err := LoadAt(repo, id, tip)
		if err != nil {
			broken = append(broken, Broken{ID: id, Log: tip.String(), Reason: brokenReason(id, err)})
			continue
		}
		out = append(out, x)
	}
	newestFirst(out)
	return out, broken, nil
}

// CheckIncoming reads a lease log that a fetch from remote would write at
// refs/leases/<id> and says, in one line, why it must be kept out: its
// record cannot be read, or names another lease; or, when allowed is not
// nil, its evidence does not verify against those signers (VerifyLease,
// with the review branch fetched beside it). nil means it may come in. A
// record from a newer git-lease may come in (it is shown read-only).
func CheckIncoming(ctx context.Context, repo *refs.Repo, remote string, id refs.ID, tip plumbing.Hash, allowed *verify.AllowedSigners) error {
	if _, err := LoadAt(repo, id, tip); err != nil {
		return fmt.Errorf("not a readable lease log: %s", brokenReason(id, err))
	}
	if allowed == nil {
		return nil
	}
	branch, err := repo.Ref(refs.RemoteBranchRef(remote, id))
	if err != nil {
		return err
	}
	if rep := VerifyLease(ctx, repo, id, tip, branch, allowed); !rep.OK {
		more := ""
		if n := len(rep.Problems) - 1; n > 0 {
			more = fmt.Sprintf(" (and %d more)", n)
		}
		return fmt.Errorf("it does not verify against your allowed signers: %s%s", rep.Problems[0], more)
	}
	return nil
}

// FetchSigners are the allowed signers that fetch verifies incoming leases
// against: those configured (lease.allowedSignersFile, else
// gpg.ssh.allowedSignersFile), with your own key, so that your leases
// come back; nil when none are configured (fetch then only reads them).
func FetchSigners(repo *refs.Repo) (*verify.AllowedSigners, error) {
	if gitConfig(repo, "lease.allowedSignersFile") == "" && gitConfig(repo, "gpg.ssh.allowedSignersFile") == "" {
		return nil, nil
	}
	return AllowedSigners(repo, "", true)
}

// removedLog is where git-lease notes every log it deleted without it
// being an ordinary prune (gc --broken, gc --force): one JSON line each,
// with the log tip, so that what it dropped can be found again
// (git show <log>) until git gc prunes the objects.
const removedLog = "removed.jsonl"

// removal is one line of removedLog.
type removal struct {
	At     time.Time `json:"at"`
	ID     refs.ID   `json:"id"`
	Log    string    `json:"log"`
	Branch string    `json:"branch,omitempty"`
	Why    string    `json:"why"`
}

// noteRemoval appends r to removedLog.
func noteRemoval(repo *refs.Repo, r removal) error {
	p := repo.LeaseDir(removedLog)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(r)
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// RemoveBroken deletes the log (and the review branch lease/<id>, if any)
// of each broken lease, compare-and-swap on the values read, after noting
// each in .git/lease/removed.jsonl with both tips. It returns what it did,
// or with dryRun would do.
func RemoveBroken(ctx context.Context, repo *refs.Repo, dryRun bool) ([]string, error) {
	_, broken, err := ListAll(repo)
	if err != nil {
		return nil, err
	}
	var done []string
	for _, b := range broken {
		what := fmt.Sprintf("remove broken lease %s (log %s: %s)", b.ID, b.Log[:12], b.Reason)
		if dryRun {
			done = append(done, "would "+what)
			continue
		}
		updates := []refs.RefUpdate{{Name: b.ID.LogRef(), Old: plumbing.NewHash(b.Log)}}
		r := removal{At: repo.Now(), ID: b.ID, Log: b.Log, Why: "gc --broken: " + b.Reason}
		if branch, _ := repo.Ref(b.ID.BranchRef()); !branch.IsZero() {
			updates = append(updates, refs.RefUpdate{Name: b.ID.BranchRef(), Old: branch})
			r.Branch = branch.String()
		}
		if err := noteRemoval(repo, r); err != nil {
			return done, err
		}
		if err := repo.Update(ctx, "git lease gc --broken", updates...); err != nil {
			return done, fmt.Errorf("lease %s: %w", b.ID, err)
		}
		done = append(done, what)
	}
	return done, nil
}

// newestFirst sorts leases by creation time, newest first, then by ID.
func newestFirst(out []*Execution) {
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Lease.CreatedAt.Equal(out[j].Lease.CreatedAt) {
			return out[i].Lease.CreatedAt.After(out[j].Lease.CreatedAt)
		}
		return out[i].Lease.ID < out[j].Lease.ID
	})
}
