package gitlease

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/sandbox"
	"github.com/git-lease/git-lease/verify"
)

// collectAndVerify computes the result on the host, verifies it, runs the
// declared checks against it and moves the lease to review with the review
// branch at the result. A result that breaks a rule is quarantined: its
// findings and evidence are recorded, nothing is materialized and the
// branch stays at the base. An agent that failed leaves a failed lease that
// still records what it changed, unless the user asked for that partial
// result (collect --partial).
func (x *Execution) collectAndVerify(ctx context.Context, d sandbox.Delta, progress io.Writer) error {
	base := plumbing.NewHash(x.Lease.Base)
	vp := x.Lease.Policy.VerifyPolicy()
	entries, err := scan(ctx, d)
	if err != nil {
		return x.fail(ctx, err.Error(), err)
	}
	artifacts, artifactFiles := x.keepArtifacts(d, entries)
	files := map[string][]byte{}
	for k, v := range artifactFiles {
		files[k] = v
	}
	result := &Result{Base: x.Lease.Base, Checks: []CheckResult{}, Artifacts: artifacts, Manifest: []verify.FileChange{}}
	findings := precheck(vp, d.Layout, entries)
	// File contents are read only when precheck found nothing but
	// reviewable findings: it keeps oversize and special files from ever
	// being read.
	readable := reviewable(findings)
	leaks, secrets, err := x.credentialLeaks(d, entries, readable)
	if err != nil {
		return x.fail(ctx, err.Error(), err)
	}
	findings = append(findings, leaks...)
	readable = readable && len(leaks) == 0
	if len(findings) > 0 && len(x.Lease.Credentials) > 0 {
		// Artifacts are files of a delta that may hold a credential: a
		// quarantined result of a lease with credentials keeps none.
		files, result.Artifacts = map[string][]byte{}, []Artifact{}
	}
	var c *collected
	if readable {
		// A result quarantined for what it touches (a protected path, a
		// submodule, a symlink) is built all the same, never materialized,
		// so that its patch is in the log for review (git lease diff).
		if c, err = build(ctx, x.Repo, base, d, entries); err != nil {
			return x.fail(ctx, err.Error(), err)
		}
		commit, err := x.Repo.WriteCommit(c.Tree, []plumbing.Hash{base},
			refs.BranchMessage(x.Lease.ID, x.Lease.Mission, summarize(c.Manifest.Files), base.String(), ""))
		if err != nil {
			return x.fail(ctx, err.Error(), err)
		}
		result.Summary, result.Commit, result.Tree = summarize(c.Manifest.Files), commit.String(), c.Tree.String()
		result.Manifest, result.PatchDigest = c.Manifest.Files, verify.PatchDigest(c.Patch)
		files[manifestFile], files[patchFile] = c.Manifest.Marshal(), c.Patch
		built, err := checkResult(x.Repo, vp, c)
		if err != nil {
			return x.fail(ctx, err.Error(), err)
		}
		findings = mergeFindings(findings, built)
	}
	if len(findings) > 0 && !(readable && x.acceptable(findings)) || len(x.quarantiningEscapes()) > 0 {
		return x.quarantine(ctx, result, findings, entries, secrets, files, progress)
	}
	if reason := x.Lease.Agent.failure(); reason != "" && !x.Lease.PartialCollect {
		result.Status = ResultFailed
		files[resultFile] = result.marshal()
		return x.Move(ctx, Failed, func(l *Lease) { l.Result, l.Reason = result, reason }, files)
	}
	result.Status = ResultOK
	files[resultFile] = result.marshal()
	// Findings left here wait for acceptance at apply (acceptable).
	if err := x.Move(ctx, Verifying, func(l *Lease) { l.Result = result; l.addFindings(findings) }, files); err != nil {
		return err
	}
	fault("start:verifying")
	return x.checkAndReview(ctx, progress)
}

// reviewable reports whether a result with these findings may still be
// built and its patch stored for review: findings only about what paths it
// touches, none that says its content must not be read (sizes, special
// files, paths git cannot hold, credentials).
func reviewable(findings []verify.Finding) bool {
	for _, f := range findings {
		switch f.Rule {
		case verify.RuleProtectedPath, verify.RuleSubmodule, verify.RuleSymlinkEscape, verify.RuleSymlinkDenied:
		default:
			return false
		}
	}
	return true
}

// mergeFindings adds to the delta's findings those of the built result
// that are not already there, ordered as verify orders them.
func mergeFindings(delta, built []verify.Finding) []verify.Finding {
	seen := map[[2]string]bool{}
	out := []verify.Finding{}
	for _, f := range append(append([]verify.Finding{}, delta...), built...) {
		if k := [2]string{f.Rule, f.Path}; !seen[k] {
			seen[k] = true
			out = append(out, f)
		}
	}
	slices.SortStableFunc(out, func(a, b verify.Finding) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), strings.Compare(a.Rule, b.Rule))
	})
	return out
}

// checkAndReview takes a verified result (state verifying) through its
// checks to review: the review branch moves to the result in the same
// transaction that records review, then the result is checked out in the
// review worktree. Reconcile resumes here after a crash.
func (x *Execution) checkAndReview(ctx context.Context, progress io.Writer) error {
	result := *x.Lease.Result
	checks, checkFiles := x.runChecks(ctx, plumbing.NewHash(result.Tree), progress)
	result.Checks = checks
	checkFiles[resultFile] = result.marshal()
	base := plumbing.NewHash(x.Lease.Base)
	branch := refs.RefUpdate{Name: x.Lease.ID.BranchRef(), Old: base, New: plumbing.NewHash(result.Commit)}
	// The notes ref is shared by every lease: when another lease's note
	// lands first, prepare ours again on top of it.
	for attempt := 0; ; attempt++ {
		envelope, note, err := x.signResult(&result)
		if err != nil {
			return x.fail(ctx, fmt.Sprintf("signing the result: %v", err), err)
		}
		checkFiles[resultReceipt] = envelope
		err = x.Move(ctx, Review, func(l *Lease) { l.Result = &result }, checkFiles, branch, note)
		if err == nil {
			break
		}
		if now, _ := x.Repo.Ref(refs.NotesRef); !errors.Is(err, refs.ErrStale) || now == note.Old || attempt == 20 {
			return err
		}
	}
	fault("start:review")
	if err := x.checkoutReview(ctx); err != nil {
		return err
	}
	fmt.Fprintf(progress, "lease %s: review: %s%s\n", x.Lease.ID, result.Summary, checkSummary(checks))
	return nil
}

// quarantine records a result that broke the rules: the findings (in the
// record and so in findings.json, so that git lease findings lists them), the
// manifest and patch when they could be computed, else a listing of the
// delta, and the artifacts. The lease's credential values (secrets) are
// redacted from the listing and the findings. The review branch is not
// moved.
func (x *Execution) quarantine(ctx context.Context, result *Result, findings []verify.Finding, entries []sandbox.Entry, secrets redactor, files map[string][]byte, progress io.Writer) error {
	result.Status = ResultQuarantined
	if result.Summary == "" {
		result.Summary = fmt.Sprintf("rejected before collection: %d entries in the delta", len(entries))
		files[deltaFile] = secrets.bytes(listDelta(entries))
	}
	for i := range findings {
		findings[i].Path, findings[i].Detail = secrets.string(findings[i].Path), secrets.string(findings[i].Detail)
	}
	files[resultFile] = result.marshal()
	var reasons []string
	if len(findings) > 0 {
		reasons = append(reasons, fmt.Sprintf("the result broke %d rule(s), first %s", len(findings), findings[0].Error()))
	}
	if escapes := x.quarantiningEscapes(); len(escapes) > 0 {
		reasons = append(reasons, fmt.Sprintf("the agent made %d critical escape attempt(s), first %s", len(escapes), escapes[0].Error()))
	}
	reason := strings.Join(reasons, "; ")
	if agent := x.Lease.Agent.failure(); agent != "" {
		reason += "; also " + agent
	}
	// The findings and the reason are recorded with the move to verifying,
	// so that reconcile finishes a quarantine cut short from the record.
	quarantined := func(l *Lease) {
		l.Result, l.Reason = result, reason
		l.addFindings(findings)
	}
	if err := x.Move(ctx, Verifying, quarantined, files); err != nil {
		return err
	}
	err := x.Move(ctx, Quarantined, nil, nil)
	if err == nil {
		fmt.Fprintf(progress, "lease %s: quarantined: %s\n", x.Lease.ID, reason)
	}
	return err
}

// listDelta describes a delta that was not collected, as evidence.
func listDelta(entries []sandbox.Entry) []byte {
	var b strings.Builder
	for i, e := range entries {
		if i == 10000 {
			fmt.Fprintf(&b, "… and %d more\n", len(entries)-i)
			break
		}
		fmt.Fprintf(&b, "%s %s %d %q\n", e.Kind, e.Mode, e.Size, e.Path)
	}
	return []byte(b.String())
}

// Bounds on artifacts kept in the lease log, which is pushed.
const (
	maxArtifact      = 1 << 20
	maxArtifactTotal = 8 << 20
)

// keepArtifacts copies the lease's declared files out of the delta (never
// through a symlink), bounded, with their sha256.
func (x *Execution) keepArtifacts(d sandbox.Delta, entries []sandbox.Entry) ([]Artifact, map[string][]byte) {
	out := []Artifact{}
	files := map[string][]byte{}
	byPath := map[string]sandbox.Entry{}
	for _, e := range entries {
		byPath[e.Path] = e
	}
	var total int64
	for _, p := range x.Lease.Artifacts {
		a := Artifact{Path: p}
		e, ok := byPath[path.Clean(p)]
		switch {
		case verify.CheckPath(p) != nil:
			a.Missing = "not a valid path in the tree"
		case !ok:
			a.Missing = "the agent did not write it"
		case e.Kind != sandbox.File:
			a.Missing = "not a regular file: " + e.Kind.String()
		case e.Size > maxArtifact || total+e.Size > maxArtifactTotal:
			a.Size, a.Missing = e.Size, "larger than the artifact bound"
		default:
			b, err := readEntry(d, e)
			if err != nil {
				a.Missing = x.hostFree(err.Error())
				break
			}
			sum := sha256.Sum256(b)
			a.Size, a.SHA256, a.Stored = int64(len(b)), hex.EncodeToString(sum[:]), "artifacts/"+p
			files[a.Stored] = b
			total += a.Size
		}
		out = append(out, a)
	}
	return out, files
}

func readEntry(d sandbox.Delta, e sandbox.Entry) ([]byte, error) {
	f, err := sandbox.OpenEntry(d, e)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, e.Size))
}

// acceptable reports whether every finding is of a rule that policy lets
// wait for acceptance at apply (result.accept_at_apply) instead of
// quarantining the result.
func (x *Execution) acceptable(findings []verify.Finding) bool {
	for _, f := range findings {
		if !slices.Contains(x.Lease.Policy.Result.AcceptAtApply, string(f.Rule)) {
			return false
		}
	}
	return true
}

// AwaitingAcceptance reports whether apply must be told to accept some of
// the lease's findings (git lease apply --accept).
func (x *Execution) AwaitingAcceptance() bool { return len(x.awaitingAcceptance()) > 0 }

// awaitingAcceptance are the lease's findings that apply must be told to
// accept (git lease apply --accept).
func (x *Execution) awaitingAcceptance() []verify.Finding {
	var out []verify.Finding
	for _, f := range x.Lease.Findings {
		if slices.Contains(x.Lease.Policy.Result.AcceptAtApply, string(f.Rule)) {
			out = append(out, f)
		}
	}
	return out
}
