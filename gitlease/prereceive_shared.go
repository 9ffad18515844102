package gitlease

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/verify"
)

// The refs teammates share beside the lease logs, as the server hook checks
// them: each only grows, every commit it gains is signed by an allowed key,
// and what each commit holds reads as its format says.

// sharedRef reports whether name is a ref the hook checks beside the lease
// logs and review branches.
func sharedRef(name string) bool {
	return name == refs.NotesRef || name == refs.RevocationsRef || strings.HasPrefix(name, GateRefPrefix)
}

// checkPushedShared checks a pushed notes ref, revocation log or gate
// record.
func checkPushedShared(ctx context.Context, repo *refs.Repo, u refs.RefUpdate, allowed *verify.AllowedSigners, refuse func(string, ...any)) {
	if u.New.IsZero() {
		refuse("deleting it is refused: it is shared evidence, and it only grows")
		return
	}
	if !u.Old.IsZero() {
		grows, err := repo.IsAncestor(ctx, u.Old, u.New)
		if err != nil {
			refuse("%v", err)
			return
		}
		if !grows {
			refuse("%s does not contain the server's %s: it only grows, so a rewrite is refused (git lease fetch merges it)", short(u.New), short(u.Old))
			return
		}
	}
	commits, err := repo.NewCommits(ctx, u.Old, u.New)
	if err != nil {
		refuse("%v", err)
		return
	}
	for _, c := range commits {
		payload, sig, err := repo.CommitSignature(c)
		if err == nil {
			_, err = verify.VerifyCommit(payload, sig, allowed)
		}
		if err != nil {
			refuse("commit %s: %v", short(c), err)
			return
		}
		switch {
		case u.Name == refs.RevocationsRef:
			if _, err := readRevocations(repo, c); err != nil {
				refuse("commit %s: %v", short(c), err)
			}
		case strings.HasPrefix(u.Name, GateRefPrefix):
			if err := checkGateCommit(repo, c); err != nil {
				refuse("commit %s: %v", short(c), err)
			}
		}
	}
	if u.Name == refs.NotesRef {
		checkPushedNotes(repo, u, allowed, refuse)
	}
}

// checkPushedNotes checks every note the push adds or changes: each of its
// texts is a result receipt signed by an allowed key about the commit the
// note annotates.
func checkPushedNotes(repo *refs.Repo, u refs.RefUpdate, allowed *verify.AllowedSigners, refuse func(string, ...any)) {
	notes, err := repo.ChangedNotes(u.Old, u.New)
	if err != nil {
		refuse("%v", err)
		return
	}
	for object, blob := range notes {
		note, err := repo.ReadBlob(blob, maxNoteBytes)
		if err != nil {
			refuse("note on %s: %v", short(object), err)
			continue
		}
		for _, text := range refs.SplitNote(note) {
			st, _, err := verify.VerifyEnvelope([]byte(text), allowed, verify.PredicateResult)
			if err == nil && !namesResult(st, object) {
				err = fmt.Errorf("the receipt is not about the commit it annotates")
			}
			if err != nil {
				refuse("note on %s: %v", short(object), err)
			}
		}
	}
}

// maxNoteBytes bounds a pushed note as the hook reads it.
const maxNoteBytes = 16 << 20

// namesResult reports whether a result receipt names commit as its result.
func namesResult(st *verify.Statement, commit plumbing.Hash) bool {
	for _, s := range st.Subject {
		if s.Name == "result" && s.Digest["gitCommit"] == commit.String() {
			return true
		}
	}
	return false
}

// checkGateCommit reads the gate record a commit of a gate ref holds.
func checkGateCommit(repo *refs.Repo, commit plumbing.Hash) error {
	b, err := repo.ReadFile(commit, gateFile, 1<<20)
	if err != nil {
		return err
	}
	_, err = parseGateRecord(b)
	return err
}
