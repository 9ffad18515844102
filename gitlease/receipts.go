package gitlease

import (
	"os"

	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/verify"
)

// The signed records of a lease, as DSSE envelopes in the log.
const (
	resultReceipt  = "receipts/result.dsse.json"
	applyReceipt   = "receipts/apply.dsse.json"
	rejectReceipt  = "receipts/reject.dsse.json"
	cleanupReceipt = "receipts/cleanup.dsse.json"
)

// resultPredicate is what the result envelope attests.
type resultPredicate struct {
	Lease        refs.ID             `json:"lease"`
	Manifest     []verify.FileChange `json:"manifest"`
	Checks       []CheckResult       `json:"checks"`
	PolicyDigest string              `json:"policy_digest"`
	Receipts     []Receipt           `json:"receipts"`
}

type applyPredicate struct {
	Lease refs.ID `json:"lease"`
	*Application
}

type rejectPredicate struct {
	Lease  refs.ID `json:"lease"`
	Reason string  `json:"reason"`
}

type cleanupPredicate struct {
	Lease refs.ID `json:"lease"`
	*Cleanup
}

func commitSubject(name, hash string) verify.Subject {
	return verify.Subject{Name: name, Digest: map[string]string{"gitCommit": hash}}
}

// resultSubjects are what the result envelope is about: the base commit,
// the result commit and tree, and the patch.
func resultSubjects(r *Result) []verify.Subject {
	return []verify.Subject{
		commitSubject("base", r.Base),
		commitSubject("result", r.Commit),
		{Name: "result-tree", Digest: map[string]string{"gitTree": r.Tree}},
		{Name: "patch", Digest: map[string]string{"sha256": strings.TrimPrefix(r.PatchDigest, "sha256:")}},
	}
}

// sign signs a statement with this user's key.
func (x *Execution) sign(predicateType string, predicate any, subjects ...verify.Subject) ([]byte, error) {
	s, err := Signing(x.Repo, os.Stderr)
	if err != nil {
		return nil, err
	}
	st, err := verify.NewStatement(predicateType, predicate, subjects...)
	if err != nil {
		return nil, err
	}
	return verify.Sign(s, st)
}

// signResult signs the result and prepares its note on the result commit,
// to go into the transaction that records review.
func (x *Execution) signResult(r *Result) ([]byte, refs.RefUpdate, error) {
	env, err := x.sign(verify.PredicateResult, resultPredicate{
		Lease: x.Lease.ID, Manifest: r.Manifest, Checks: r.Checks, PolicyDigest: x.Lease.PolicyDigest, Receipts: x.Lease.Receipts,
	}, resultSubjects(r)...)
	if err != nil {
		return nil, refs.RefUpdate{}, err
	}
	note, err := x.Repo.NoteUpdate(plumbing.NewHash(r.Commit), env, "lease "+string(x.Lease.ID)+": result receipt\n")
	return env, note, err
}
