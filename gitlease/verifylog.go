package gitlease

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/verify"
)

// VerifyReport says whether a lease's evidence holds, and where it does not.
type VerifyReport struct {
	ID       refs.ID  `json:"id"`
	OK       bool     `json:"ok"`
	Entries  int      `json:"entries"`
	Signers  []string `json:"signers"`
	Problems []string `json:"problems"`
}

// receiptTypes maps each signed record in the log to its predicate type.
var receiptTypes = map[string]string{
	resultReceipt: verify.PredicateResult, applyReceipt: verify.PredicateApply,
	rejectReceipt: verify.PredicateReject, cleanupReceipt: verify.PredicateCleanup,
}

// VerifyLease checks a lease log whose tip is tip (and whose review
// branch is at branch; zero means the branch is absent) against allowed:
// the log is one chain of legal transitions from "new", every log commit is
// signed by an allowed key and holds a record that agrees with its message;
// every signed record verifies, is of its kind, and names exactly the
// objects the record and the refs hold; the result tree matches the
// manifest and the patch its digest; the records each state requires are
// there; and the branch is where the state says. It needs only objects, so
// it works on fetched and pushed logs alike.
func VerifyLease(ctx context.Context, repo *refs.Repo, id refs.ID, tip, branch plumbing.Hash, allowed *verify.AllowedSigners) *VerifyReport {
	rep := &VerifyReport{ID: id, Signers: []string{}, Problems: []string{}}
	problem := func(format string, args ...any) { rep.Problems = append(rep.Problems, fmt.Sprintf(format, args...)) }
	entries, err := repo.Log(tip)
	if err != nil {
		problem("log: %v", err)
		return rep
	}
	rep.Entries = len(entries)
	signers := map[string]bool{}
	prev := New
	var record *Lease
	for i, e := range entries {
		where := fmt.Sprintf("log entry %d (%s)", i+1, e.Commit.String()[:12])
		subject := strings.SplitN(e.Message, "\n", 2)[0]
		entry, parseErr := refs.ParseEntry(subject)
		parsed := parseErr == nil
		from, to := State(entry.From), State(entry.To)
		switch {
		case !parsed || entry.ID != id:
			problem("%s: %q is not a log entry of lease %s", where, subject, id)
		case from != prev:
			problem("%s: %q does not follow state %s (an entry was removed or reordered)", where, subject, prev)
		case entry.Event == "" && !CanMove(from, to):
			problem("%s: %s -> %s is not a legal transition", where, from, to)
		}
		if parsed {
			prev = to
		}
		payload, sig, err := repo.CommitSignature(e.Commit)
		if err == nil {
			var who verify.Identity
			if who, err = verify.VerifyCommit(payload, sig, allowed); err == nil {
				signers[who.Principals] = true
			}
		}
		if err != nil {
			problem("%s: %v", where, err)
		}
		b, err := repo.ReadFile(e.Commit, recordFile, maxRecord)
		if err == nil {
			record, err = parseLease(b)
		}
		if err != nil {
			problem("%s: %v", where, err)
			record = nil
			continue
		}
		if record.ID != id || (parsed && record.State != to) {
			problem("%s: lease.json says lease %s is %s, the message says %q", where, record.ID, record.State, subject)
		}
		if record.Seq != i+1 {
			problem("%s: lease.json is entry %d of its log, but it is entry %d here (an entry was removed or reordered)", where, record.Seq, i+1)
		}
	}
	for s := range signers {
		rep.Signers = append(rep.Signers, s)
	}
	if record != nil {
		verifyEvidence(ctx, repo, tip, branch, record, allowed, problem)
	}
	rep.OK = len(rep.Problems) == 0
	return rep
}

// verifyEvidence checks the tip's signed records and result against the
// record and the refs.
func verifyEvidence(ctx context.Context, repo *refs.Repo, tip, branch plumbing.Hash, l *Lease, allowed *verify.AllowedSigners, problem func(string, ...any)) {
	present := map[string]bool{}
	for name, predicateType := range receiptTypes {
		env, err := repo.ReadFile(tip, name, 4<<20)
		if err != nil {
			continue
		}
		present[name] = true
		st, _, err := verify.VerifyEnvelope(env, allowed, predicateType)
		if err != nil {
			problem("%s: %v", name, err)
			continue
		}
		if want := wantSubjects(name, l); want != nil && !sameSubjects(st.Subject, want) {
			problem("%s: its subjects do not name the lease's objects (the record or a ref was changed after signing)", name)
		}
		if name == resultReceipt && l.Result != nil {
			var p resultPredicate
			if json.Unmarshal(st.Predicate, &p) != nil || !slices.Equal(p.Manifest, l.Result.Manifest) {
				problem("%s: the signed manifest is not the record's", name)
			}
		}
		if name == cleanupReceipt && l.Cleanup != nil {
			var p Cleanup
			if json.Unmarshal(st.Predicate, &p) != nil || p.State != l.Cleanup.State {
				problem("%s: the signed cleanup state is not the record's %s", name, l.Cleanup.State)
			}
		}
	}
	need := map[State][]string{Review: {resultReceipt}, Applied: {resultReceipt, applyReceipt}, Rejected: {resultReceipt, rejectReceipt}}[l.State]
	if l.State == Applied && !l.holdsResult() {
		need = []string{applyReceipt} // part of a quarantined result: it never had a result receipt
	}
	if l.Cleanup != nil && l.Cleanup.State != CleanupPending {
		need = append(need, cleanupReceipt)
	}
	for _, name := range need {
		if !present[name] {
			problem("%s is missing: a lease that is %s must carry it", name, l.State)
		}
	}
	if r := l.Result; r != nil && r.Tree != "" {
		checkRecorded(ctx, repo, tip, l, problem)
	}
	wantBranch := l.Base
	if l.holdsResult() {
		wantBranch = l.Result.Commit
	}
	if branch.String() != wantBranch && !branch.IsZero() {
		problem("branch %s is at %s, but a lease that is %s has it at %s", l.Branch, branch, l.State, wantBranch)
	}
}

// checkRecorded is the one check of a recorded result, used by verify,
// review, apply, fetch and the server hook. It reads the patch and the
// manifest from the log at tip and checks: the patch against its digest;
// the manifest against the record and the patch's headers; base + patch,
// applied by git in a private index, against the result tree; the result
// commit; and base -> result tree against the manifest. Problems go to
// problem; result.json must be the record's result. It returns what it checked, one line each, and the tree git
// derived (zero when the patch did not apply).
func checkRecorded(ctx context.Context, repo *refs.Repo, tip plumbing.Hash, l *Lease, problem func(string, ...any)) (checked []string, derived plumbing.Hash) {
	r := l.Result
	patch, err := repo.ReadFile(tip, patchFile, maxPatch)
	if err != nil || verify.PatchDigest(patch) != r.PatchDigest {
		problem("%s: its digest is not the recorded %s", patchFile, r.PatchDigest)
	}
	checked = append(checked, "patch digest")
	mb, err := repo.ReadFile(tip, manifestFile, maxPatch)
	var manifest *verify.Manifest
	if err == nil {
		if manifest, err = verify.ParseManifest(mb); err == nil && !slices.Equal(manifest.Files, r.Manifest) {
			err = fmt.Errorf("it lists other changes than the record")
		}
	}
	if err != nil {
		problem("%s: %v", manifestFile, err)
	} else if parsed, err := verify.ParsePatch(patch); err != nil {
		problem("%s: %v", patchFile, err)
	} else if err := verify.CheckPatchManifest(parsed, manifest); err != nil {
		problem("patch and manifest disagree: %v", err)
	}
	checked = append(checked, "patch headers = manifest")
	if stored, err := readResult(repo, tip); err != nil {
		problem("%s: %v", resultFile, err)
	} else if !bytes.Equal(stored.marshal(), r.marshal()) {
		problem("%s is not the record's result", resultFile)
	}
	if derived, err = deriveTree(ctx, repo, r.Base, patch); err != nil {
		problem("the patch does not apply to the base: %v", err)
	} else if derived.String() != r.Tree {
		problem("base + patch gives tree %s, the record says %s", derived, r.Tree)
	}
	base, err := repo.Commit(plumbing.NewHash(r.Base))
	if err != nil {
		problem("base %s: %v", r.Base, err)
	} else if files, err := changedFiles(repo, base.TreeHash, plumbing.NewHash(r.Tree)); err != nil || !slices.Equal(files, r.Manifest) {
		problem("the result tree %s is not the base plus the manifest's changes", r.Tree)
	}
	checked = append(checked, "base + patch = result tree = manifest")
	if !l.holdsResult() && !repo.HasObject(plumbing.NewHash(r.Commit)) {
		// No ref reaches the result commit of a lease that failed or was
		// quarantined, so it is never pushed: a clone that fetched the
		// lease has its patch and manifest (checked above) but not its
		// commit, and nothing can apply it.
		return append(checked, "no result commit here (a "+string(l.State)+" result is never pushed)"), derived
	}
	c, err := repo.Commit(plumbing.NewHash(r.Commit))
	if err != nil || c.TreeHash.String() != r.Tree || len(c.ParentHashes) != 1 || c.ParentHashes[0].String() != r.Base {
		problem("result commit %s is not the result tree on the base", r.Commit)
	}
	return checked, derived
}

// readResult reads result/result.json as this git-lease knows it (a
// newer version's fields it does not know are left out, as lease.json's
// are).
func readResult(repo *refs.Repo, tip plumbing.Hash) (*Result, error) {
	b, err := repo.ReadFile(tip, resultFile, maxRecord)
	if err != nil {
		return nil, err
	}
	var stored struct {
		Version int `json:"version"`
		Result
	}
	if err := json.Unmarshal(b, &stored); err != nil {
		return nil, err
	}
	if stored.Version < 1 {
		return nil, fmt.Errorf("version %d (this git-lease reads 1 to %d)", stored.Version, resultVersion)
	}
	return &stored.Result, nil
}

// deriveTree applies the patch to base in a private index (git apply
// --cached: no work tree is read or written) and writes the tree.
func deriveTree(ctx context.Context, repo *refs.Repo, base string, patch []byte) (plumbing.Hash, error) {
	tmp, err := os.MkdirTemp("", "git-lease-review-")
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer os.RemoveAll(tmp)
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index")}
	if _, err := repo.GitEnv(ctx, env, nil, "read-tree", base); err != nil {
		return plumbing.ZeroHash, err
	}
	if len(patch) > 0 {
		if _, err := repo.GitEnv(ctx, env, patch, "apply", "--cached", "--binary", "--whitespace=nowarn", "-"); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	out, err := repo.GitEnv(ctx, env, nil, "write-tree")
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return plumbing.NewHash(string(bytes.TrimSpace(out))), nil
}

// wantSubjects is what each signed record must be about.
func wantSubjects(name string, l *Lease) []verify.Subject {
	switch {
	case name == resultReceipt && l.Result != nil:
		return resultSubjects(l.Result)
	case name == applyReceipt && l.Applied != nil:
		return []verify.Subject{commitSubject(l.Applied.Target, l.Applied.Commit), commitSubject("from", l.Applied.From)}
	case name == rejectReceipt && l.Result != nil:
		return []verify.Subject{commitSubject("result", l.Result.Commit)}
	case name == cleanupReceipt:
		return []verify.Subject{commitSubject("base", l.Base)}
	}
	return nil
}

func sameSubjects(a, b []verify.Subject) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// Verify checks one lease of this repository with VerifyLease, from its
// log ref and branch.
func Verify(ctx context.Context, x *Execution, allowed *verify.AllowedSigners) *VerifyReport {
	branch, _ := x.Repo.Ref(x.Lease.ID.BranchRef())
	return VerifyLease(ctx, x.Repo, x.Lease.ID, x.Tip, branch, allowed)
}
