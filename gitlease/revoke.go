package gitlease

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/git-lease/git-lease/gitlease/policy"
	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/verify"
)

// A revocation stops new starts in a repository, or for one mission, until
// it is lifted. The decisions are a log at refs.RevocationsRef: one signed
// commit per decision, whose tree's revocations.json is every revocation in
// force. Trusted policy's revoke.reason revokes every repository of the
// user instead, and is lifted by removing it.

// The cancellation policies of a revocation for the leases already running.
const (
	PolicyCancel    = "cancel"     // cancel them (git lease cancel)
	PolicyLetFinish = "let-finish" // let them finish; only new starts are refused
)

// revocationsFile is the file of a revocation log's tree.
const revocationsFile = "revocations.json"

// revocationsVersion is the version of revocations.json.
const revocationsVersion = 1

// Revocation is one revocation in force.
type Revocation struct {
	// Mission is the mission revoked; "" revokes the whole repository.
	Mission string    `json:"mission,omitempty"`
	Reason  string    `json:"reason"`
	Policy  string    `json:"policy"`
	By      string    `json:"by"` // "Name <email>" of whoever signed the decision
	At      time.Time `json:"at"`
}

// Scope names what r revokes, for people.
func (r Revocation) Scope() string {
	if r.Mission == "" {
		return "this repository"
	}
	return "mission " + r.Mission
}

// revocations is revocations.json.
type revocations struct {
	Version int          `json:"version"`
	Revoked []Revocation `json:"revoked"`
}

// maxRevocations bounds revocations.json as read, against a hostile log.
const maxRevocations = 1 << 20

// Revocations returns the revocations in force in repo, from the newest
// decision of its revocation log. When allowed signers are configured
// (FetchSigners), every decision of the log must verify against them: one
// that does not, such as a lift fetched from someone not allowed, makes it
// an error, and starts are refused until the log is repaired.
func Revocations(repo *refs.Repo) ([]Revocation, error) {
	tip, err := repo.Ref(refs.RevocationsRef)
	if err != nil || tip.IsZero() {
		return nil, err
	}
	allowed, err := FetchSigners(repo)
	if err != nil {
		return nil, err
	}
	if allowed != nil {
		entries, err := repo.Log(tip)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			payload, sig, err := repo.CommitSignature(e.Commit)
			if err == nil {
				_, err = verify.VerifyCommit(payload, sig, allowed)
			}
			if err != nil {
				return nil, fmt.Errorf("the revocation log %s does not verify at %s: %v; new starts are refused until it does (git log %s)",
					refs.RevocationsRef, e.Commit.String()[:12], err, refs.RevocationsRef)
			}
		}
	}
	return readRevocations(repo, tip)
}

// readRevocations reads the decision at commit of a revocation log.
func readRevocations(repo *refs.Repo, commit plumbing.Hash) ([]Revocation, error) {
	b, err := repo.ReadFile(commit, revocationsFile, maxRevocations)
	if err != nil {
		return nil, err
	}
	var rs revocations
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&rs); err != nil || rs.Version < 1 {
		return nil, fmt.Errorf("%s: %s is not a revocation record (version %d): %v", refs.RevocationsRef, revocationsFile, rs.Version, err)
	}
	return rs.Revoked, nil
}

// RevokeOptions are the inputs of git lease revoke.
type RevokeOptions struct {
	Mission string
	Reason  string
	Policy  string // PolicyCancel or PolicyLetFinish
	Grace   time.Duration
	// Progress receives a line per lease canceled.
	Progress io.Writer
}

// RevokeOutcome is what a revocation did.
type RevokeOutcome struct {
	Revocation Revocation `json:"revocation"`
	// Canceled are the running leases the revocation canceled; Running,
	// the ones it let finish or could not cancel from this clone, with why.
	Canceled []refs.ID    `json:"canceled"`
	Running  []RunningNow `json:"running"`
}

// RunningNow is a lease that kept running through a revocation.
type RunningNow struct {
	ID  refs.ID `json:"id"`
	Why string  `json:"why"`
}

// Revoke records a signed revocation of the repository (or of a mission)
// and then applies its policy to the leases running in its scope. The
// decision is recorded first, so that no start slips in while leases are
// being canceled.
func Revoke(ctx context.Context, repo *refs.Repo, opts RevokeOptions) (*RevokeOutcome, error) {
	if opts.Policy != PolicyCancel && opts.Policy != PolicyLetFinish {
		return nil, fmt.Errorf("unknown revocation policy %q: use %s or %s", opts.Policy, PolicyCancel, PolicyLetFinish)
	}
	if strings.TrimSpace(opts.Reason) == "" {
		return nil, errors.New("a revocation needs a reason (--reason): whoever is refused reads it")
	}
	if _, err := Signing(repo, opts.Progress); err != nil {
		return nil, err
	}
	who, err := repo.Identity()
	if err != nil {
		return nil, err
	}
	r := Revocation{Mission: opts.Mission, Reason: oneLine(opts.Reason), Policy: opts.Policy,
		By: fmt.Sprintf("%s <%s>", who.Name, who.Email), At: repo.Now().UTC()}
	err = updateRevocations(ctx, repo, func(in []Revocation) ([]Revocation, string, error) {
		out := slices.DeleteFunc(in, func(o Revocation) bool { return o.Mission == r.Mission })
		msg := refs.RevocationMessage("revoke", r.Scope(), string(r.Policy), r.Reason)
		return append(out, r), msg, nil
	})
	if err != nil {
		return nil, err
	}
	outcome := &RevokeOutcome{Revocation: r, Canceled: []refs.ID{}, Running: []RunningNow{}}
	active, err := List(repo)
	if err != nil {
		return outcome, err
	}
	var errs []error
	for _, x := range active {
		if x.Lease.State != Running && x.Lease.State != Provisioning || (r.Mission != "" && x.Lease.Mission != r.Mission) {
			continue
		}
		switch {
		case r.Policy == PolicyLetFinish:
			outcome.Running = append(outcome.Running, RunningNow{x.Lease.ID, "let finish"})
		case x.StartedElsewhere():
			outcome.Running = append(outcome.Running, RunningNow{x.Lease.ID, "started in another clone: revoke there, or push this revocation to it"})
		default:
			if x.Lease.State == Provisioning {
				// A start that recorded its lease before this decision:
				// it either stops at its own second look (start.go) or
				// runs, and then it is canceled.
				if err := x.awaitProvisioned(ctx); err != nil {
					errs = append(errs, err)
					outcome.Running = append(outcome.Running, RunningNow{x.Lease.ID, err.Error()})
					continue
				}
				if x.Lease.State != Running {
					continue
				}
			}
			if opts.Progress != nil {
				fmt.Fprintf(opts.Progress, "lease %s: canceling (revoked)\n", x.Lease.ID)
			}
			if err := Cancel(ctx, x, opts.Grace); err != nil {
				errs = append(errs, err)
				outcome.Running = append(outcome.Running, RunningNow{x.Lease.ID, err.Error()})
				continue
			}
			outcome.Canceled = append(outcome.Canceled, x.Lease.ID)
		}
	}
	return outcome, errors.Join(errs...)
}

// Unrevoke lifts the revocation of the repository (or of a mission) with
// a signed decision.
func Unrevoke(ctx context.Context, repo *refs.Repo, mission string, notice io.Writer) (*Revocation, error) {
	if _, err := Signing(repo, notice); err != nil {
		return nil, err
	}
	var lifted Revocation
	err := updateRevocations(ctx, repo, func(in []Revocation) ([]Revocation, string, error) {
		i := slices.IndexFunc(in, func(o Revocation) bool { return o.Mission == mission })
		if i < 0 {
			return nil, "", fmt.Errorf("%s is not revoked", Revocation{Mission: mission}.Scope())
		}
		lifted = in[i]
		msg := refs.RevocationMessage("lift", lifted.Scope(), "", "")
		return slices.Delete(in, i, i+1), msg, nil
	})
	if err != nil {
		return nil, err
	}
	return &lifted, nil
}

// updateRevocations appends one decision to the revocation log: change
// maps the revocations in force to the new ones and the decision's message.
// The ref moves by compare-and-swap, so two decisions never lose one.
func updateRevocations(ctx context.Context, repo *refs.Repo, change func([]Revocation) ([]Revocation, string, error)) error {
	tip, err := repo.Ref(refs.RevocationsRef)
	if err != nil {
		return err
	}
	in, err := Revocations(repo)
	if err != nil {
		return err
	}
	out, msg, err := change(in)
	if err != nil {
		return err
	}
	if out == nil {
		out = []Revocation{}
	}
	b, _ := json.MarshalIndent(revocations{Version: revocationsVersion, Revoked: out}, "", "  ")
	blob, err := repo.WriteBlob(append(b, '\n'))
	if err != nil {
		return err
	}
	tree, err := repo.WriteTreeOrEmpty(plumbing.ZeroHash, []refs.TreeEdit{{Path: revocationsFile, Mode: filemode.Regular, Hash: blob}})
	if err != nil {
		return err
	}
	var parents []plumbing.Hash
	if !tip.IsZero() {
		parents = []plumbing.Hash{tip}
	}
	commit, err := repo.WriteCommit(tree, parents, msg)
	if err != nil {
		return err
	}
	return repo.Update(ctx, msg, refs.RefUpdate{Name: refs.RevocationsRef, Old: tip, New: commit})
}

// checkRevoked refuses a start that a revocation in force covers: trusted
// policy's, the repository's, or its mission's. The message says who
// revoked, when, why, and how to lift it.
func checkRevoked(repo *refs.Repo, eff *policy.Effective, mission string) error {
	if reason := eff.Revoke.Reason; reason != "" {
		path, _ := policy.TrustedPath(repo)
		return fmt.Errorf("new leases are revoked for all your repositories by trusted policy (%s): %s; to lift it, remove revoke.reason there", path, reason)
	}
	rs, err := Revocations(repo)
	if err != nil {
		return err
	}
	for _, r := range rs {
		if r.Mission != "" && r.Mission != mission {
			continue
		}
		lift := "git lease unrevoke"
		if r.Mission != "" {
			lift += " --mission " + r.Mission
		}
		return fmt.Errorf("new leases are revoked for %s by %s at %s: %s; to lift it: %s",
			r.Scope(), r.By, r.At.Format(time.RFC3339), r.Reason, lift)
	}
	return nil
}

// awaitProvisioned reloads x until it is no longer provisioning, for at
// most a minute: long enough for a sandbox to be set up.
func (x *Execution) awaitProvisioned(ctx context.Context) error {
	for deadline := time.Now().Add(time.Minute); x.Lease.State == Provisioning; {
		if time.Now().After(deadline) {
			return fmt.Errorf("lease %s is still provisioning after a minute: cancel it with git lease cancel once it runs", x.Lease.ID)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		y, err := Load(x.Repo, x.Lease.ID)
		if err != nil {
			return err
		}
		*x = *y
	}
	return nil
}
