package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// plumber builds commits in a clone with git plumbing alone, as a tool that
// knows nothing of git-lease, or an attacker, would.
type plumber struct {
	t   *testing.T
	dir string
}

func (p plumber) git(env []string, stdin string, args ...string) string {
	p.t.Helper()
	out, err := gitIn(p.dir, env, stdin, args...)
	if err != nil {
		p.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(out)
}

// entries lists a log's commits, oldest first.
func (p plumber) entries(ref string) []string {
	return strings.Fields(p.git(nil, "", "rev-list", "--reverse", "--first-parent", ref))
}

// treeWith is commit's tree with path holding content, built in a temporary index.
func (p plumber) treeWith(commit, path, content string) string {
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(p.t.TempDir(), "index")}
	p.git(env, "", "read-tree", commit+"^{tree}")
	blob := p.git(nil, content, "hash-object", "-w", "--stdin")
	p.git(env, "", "update-index", "--add", "--cacheinfo", "100644,"+blob+","+path)
	return p.git(env, "", "write-tree")
}

// commit writes a commit of tree on parent ("": none) with message, SSH-signed
// with key as git signs (gpg.format=ssh), or unsigned when key is "".
func (p plumber) commit(tree, parent, message, key string, env ...string) string {
	var args []string
	if key != "" {
		args = append(args, "-c", "gpg.format=ssh", "-c", "user.signingkey="+key)
	}
	args = append(args, "commit-tree", tree, "-F", "-")
	if parent != "" {
		args = append(args, "-p", parent)
	}
	if key != "" {
		args = append(args, "-S")
	}
	return p.git(env, message, args...)
}

// rechain copies commits (trees and messages) onto parent, each signed with key.
func (p plumber) rechain(commits []string, parent, key string) string {
	for _, c := range commits {
		parent = p.commit(p.git(nil, "", "rev-parse", c+"^{tree}"), parent, p.git(nil, "", "log", "-1", "--format=%B", c)+"\n", key)
	}
	return parent
}

// setRef points ref at value in the clone, whatever it was.
func (p plumber) setRef(ref, value string) { p.git(nil, "", "update-ref", ref, value) }

// tamper is one way to change a pushed lease, what git lease verify must
// then say in the clone, and what the server's hook must say to the push.
type tamper struct {
	name string
	// do changes the clone's refs and returns what to push with git push
	// origin (nil: git lease push origin ID), and what verify and the
	// server must say.
	do func(t *testing.T, p plumber, tm *team) (push []string, verify, remote []string)
}

func TestTamperedLeasesFailVerifyAndAreRefusedByTheServer(t *testing.T) {
	tm := newTeam(t)
	logRef, branchRef := "refs/leases/"+tm.id, "refs/heads/lease/"+tm.id
	reason := "remote: git-lease: " + logRef + ": "
	rogue := filepath.Join(t.TempDir(), "rogue")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "rogue", "-f", rogue).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	event := fmt.Sprintf("lease %s: review -> review\n", tm.id)
	// nonFF is what the server says of a log that does not extend its own.
	nonFF := func(p plumber) string {
		return reason + p.git(nil, "", "rev-parse", logRef)[:12] + " is not a fast-forward of the server's " + tm.serverTip(p.t)[:12]
	}
	for _, tc := range []tamper{
		{"edit lease.json in a new commit", func(t *testing.T, p plumber, tm *team) ([]string, []string, []string) {
			tip := p.git(nil, "", "rev-parse", logRef)
			record := p.git(nil, "", "show", tip+":lease.json")
			edited := strings.Replace(record, `"base_ref": "refs/heads/main"`, `"base_ref": "refs/heads/release"`, 1)
			if edited == record {
				t.Fatalf("lease.json has no base_ref to edit:\n%s", record)
			}
			c := p.commit(p.treeWith(tip, "lease.json", edited+"\n"), tip, event, "")
			p.setRef(logRef, c)
			want := fmt.Sprintf("log entry %d (%s): bad signature: the commit is not signed", len(p.entries(logRef)), c[:12])
			return nil, []string{want}, []string{reason + want}
		}},
		{"swap the patch", func(t *testing.T, p plumber, tm *team) ([]string, []string, []string) {
			tip := p.git(nil, "", "rev-parse", logRef)
			swapped := "diff --git a/bug.txt b/bug.txt\n--- a/bug.txt\n+++ b/bug.txt\n@@ -1 +1 @@\n-broken\n+pwned\n"
			p.setRef(logRef, p.commit(p.treeWith(tip, "result/patch.diff", swapped), tip, event, tm.key))
			want := "result/patch.diff: its digest is not the recorded sha256:"
			return nil, []string{want}, []string{reason + want}
		}},
		{"drop a log commit", func(t *testing.T, p plumber, tm *team) ([]string, []string, []string) {
			e := p.entries(logRef)
			n := indexOfSubject(p, e, "running -> collecting")
			p.setRef(logRef, p.rechain(e[n+1:], e[n-1], tm.key)) // without running -> collecting
			next := p.entries(logRef)[n]
			want := fmt.Sprintf("log entry %d (%s): \"lease %s: collecting -> verifying\" does not follow state running (an entry was removed or reordered)", n+1, next[:12], tm.id)
			return []string{"--force", logRef}, []string{want}, []string{reason + want, nonFF(p)}
		}},
		{"drop an event entry, re-signed by an allowed key", func(t *testing.T, p plumber, tm *team) ([]string, []string, []string) {
			e := p.entries(logRef)
			n := indexOfSubject(p, e, "running: working")
			p.setRef(logRef, p.rechain(e[n+1:], e[n-1], tm.key)) // the transitions still chain: only seq tells
			next := p.entries(logRef)[n]
			want := fmt.Sprintf("log entry %d (%s): lease.json is entry %d of its log, but it is entry %d here", n+1, next[:12], n+2, n+1)
			return []string{"--force", logRef}, []string{want}, []string{reason + want, nonFF(p)}
		}},
		{"re-sign with a key not in the allowed signers", func(t *testing.T, p plumber, tm *team) ([]string, []string, []string) {
			p.setRef(logRef, p.rechain(p.entries(logRef), "", rogue))
			first := p.entries(logRef)[0]
			want := fmt.Sprintf("log entry 1 (%s): signer is not allowed: key SHA256:", first[:12])
			return []string{"--force", logRef}, []string{want, "is not in the allowed signers"}, []string{reason + want, nonFF(p)}
		}},
		{"move lease/<id> to another commit", func(t *testing.T, p plumber, tm *team) ([]string, []string, []string) {
			result := p.git(nil, "", "rev-parse", branchRef)
			moved := p.commit(p.git(nil, "", "rev-parse", result+"^{tree}"), result, "more on top\n", "")
			p.setRef(branchRef, moved)
			want := fmt.Sprintf("branch lease/%s is at %s, but a lease that is review has it at %s", tm.id, moved, result)
			return []string{branchRef}, []string{want}, []string{"remote: git-lease: " + branchRef + ": " + want}
		}},
		{"force-push a rewritten log", func(t *testing.T, p plumber, tm *team) ([]string, []string, []string) {
			e := p.entries(logRef)
			tip := e[len(e)-1]
			amended := p.commit(p.git(nil, "", "rev-parse", tip+"^{tree}"), e[len(e)-2], p.git(nil, "", "log", "-1", "--format=%B", tip)+"\n", "")
			p.setRef(logRef, amended)
			want := fmt.Sprintf("log entry %d (%s): bad signature: the commit is not signed", len(e), amended[:12])
			return []string{"--force", logRef}, []string{want}, []string{reason + want, nonFF(p)}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := plumber{t, tm.clone(t)}
			before := tm.serverRefs(t)
			push, verify, remote := tc.do(t, p, tm)
			out, err := runLease(t, p.dir, nil, "verify", tm.id, "--allowed-signers", tm.signers)
			if err == nil || !strings.Contains(out, "lease "+tm.id+": FAILED") {
				t.Fatalf("verify passed a tampered lease: %v\n%s", err, out)
			}
			for _, want := range verify {
				if !strings.Contains(out, want) {
					t.Errorf("verify does not say %q:\n%s", want, out)
				}
			}
			if push == nil {
				out, err = runLease(t, p.dir, nil, "push", "origin", tm.id)
			} else {
				out, err = gitIn(p.dir, nil, "", append([]string{"push", "origin"}, push...)...)
			}
			if err == nil || !strings.Contains(out, "pre-receive hook declined") {
				t.Fatalf("the server took the tampered push: %v\n%s", err, out)
			}
			for _, want := range remote {
				if !strings.Contains(out, want) {
					t.Errorf("the server does not say %q:\n%s", want, out)
				}
			}
			if after := tm.serverRefs(t); after != before {
				t.Fatalf("the server's refs changed:\n%s\nwere:\n%s", after, before)
			}
		})
	}
}

func TestServerRefusesRewritesDeletionsAndStrayNamesEvenWhenTheyVerify(t *testing.T) {
	tm := newTeam(t)
	p := plumber{t, tm.clone(t)}
	logRef := "refs/leases/" + tm.id
	e := p.entries(logRef)
	tip := e[len(e)-1]
	// The same entry, signed again by the honest key at another time: it
	// verifies, but it is another log.
	resigned := p.commit(p.git(nil, "", "rev-parse", tip+"^{tree}"), e[len(e)-2], p.git(nil, "", "log", "-1", "--format=%B", tip)+"\n",
		tm.key, "GIT_COMMITTER_DATE=2026-02-03T04:05:06Z")
	p.setRef(logRef, resigned)
	if out, err := runLease(t, p.dir, nil, "verify", tm.id, "--allowed-signers", tm.signers); err != nil {
		t.Fatalf("the re-signed log should verify: %v\n%s", err, out)
	}
	for _, c := range []struct {
		name   string
		push   []string
		reason string
	}{
		{"a rewritten log that verifies", []string{"--force", logRef}, logRef + ": " + resigned[:12] + " is not a fast-forward of the server's " + tip[:12]},
		{"a deleted log", []string{":" + logRef}, logRef + ": deleting a lease log is refused"},
		{"a log under a name that is not an ID", []string{tip + ":refs/leases/not-an-id"}, "refs/leases/not-an-id: not a lease log"},
		{"a review branch without a log on the server", []string{"HEAD:refs/heads/lease/0123456789ab"}, "refs/heads/lease/0123456789ab: the server has no lease log"},
	} {
		t.Run(c.name, func(t *testing.T) { tm.mustRefusePush(t, p.dir, c.push, c.reason) })
	}
	// The plain branch lease/<id>-edits is no review branch: it passes.
	if out, err := gitIn(p.dir, nil, "", "push", "origin", "HEAD:refs/heads/lease/"+tm.id+"-edits"); err != nil {
		t.Fatalf("pushing an ordinary branch: %v\n%s", err, out)
	}
}

// indexOfSubject finds the log entry whose subject ends with suffix.
func indexOfSubject(p plumber, entries []string, suffix string) int {
	for i, e := range entries {
		if strings.HasSuffix(p.git(nil, "", "log", "-1", "--format=%s", e), suffix) {
			return i
		}
	}
	p.t.Fatalf("no log entry %q", suffix)
	return -1
}

// The refs shared beside the logs (result notes, the revocation log, gate
// records) are checked by the server too: it takes what git-lease writes
// and refuses forged, unsigned, rewritten or deleted ones.
func TestServerChecksSharedNotesAndRevocations(t *testing.T) {
	tm := newTeam(t)
	p := plumber{t, tm.clone(t)}
	// An honest revocation travels.
	mustRun(t, p.dir, "revoke", "--reason", "rotating keys")
	if out, err := runLease(t, p.dir, nil, "push"); err != nil {
		t.Fatalf("pushing a revocation: %v\n%s", err, out)
	}
	notes := p.git(nil, "", "rev-parse", "refs/notes/leases")
	revocations := p.git(nil, "", "rev-parse", "refs/lease-revocations/log")
	result := p.git(nil, "", "rev-parse", "refs/heads/lease/"+tm.id)
	main := p.git(nil, "", "rev-parse", "main")
	receipt := p.git(nil, "", "notes", "--ref", "leases", "show", result)
	for _, c := range []struct {
		name   string
		push   []string
		reason string
	}{
		{"a note that is no receipt", []string{p.commit(p.treeWith(notes, main, "looks good to me\n"), notes, "forged note\n", tm.key) + ":refs/notes/leases"},
			"refs/notes/leases: note on " + main[:12] + ": "},
		{"a receipt moved onto another commit", []string{p.commit(p.treeWith(notes, main, receipt+"\n"), notes, "moved note\n", tm.key) + ":refs/notes/leases"},
			"refs/notes/leases: note on " + main[:12] + ": the receipt is not about the commit it annotates"},
		{"an unsigned notes commit", []string{p.commit(p.treeWith(notes, main, receipt+"\n"), notes, "unsigned\n", "") + ":refs/notes/leases"},
			"refs/notes/leases: commit "},
		{"rewritten notes", []string{"--force", p.commit(p.git(nil, "", "rev-parse", notes+"^{tree}"), "", "rewritten\n", tm.key) + ":refs/notes/leases"},
			"refs/notes/leases: "},
		{"deleted notes", []string{":refs/notes/leases"}, "refs/notes/leases: deleting it is refused"},
		{"a revocation that does not read", []string{p.commit(p.treeWith(revocations, "revocations.json", "{}"), revocations, "lifted\n", tm.key) + ":refs/lease-revocations/log"},
			"refs/lease-revocations/log: commit "},
		{"an unsigned lift", []string{p.commit(p.treeWith(revocations, "revocations.json", `{"version": 1, "revoked": []}`), revocations, "lifted\n", "") + ":refs/lease-revocations/log"},
			"refs/lease-revocations/log: commit "},
		{"a deleted revocation log", []string{":refs/lease-revocations/log"}, "refs/lease-revocations/log: deleting it is refused"},
	} {
		t.Run(c.name, func(t *testing.T) { tm.mustRefusePush(t, p.dir, c.push, c.reason) })
	}
}

// mustRefusePush pushes refspecs from dir to the team's server and fails
// unless the server refuses them with reason and keeps its refs.
func (tm *team) mustRefusePush(t *testing.T, dir string, push []string, reason string) {
	t.Helper()
	before := tm.serverRefs(t)
	out, err := gitIn(dir, nil, "", append([]string{"push", "origin"}, push...)...)
	if err == nil || !strings.Contains(out, "remote: git-lease: "+reason) {
		t.Fatalf("push %s: %v\n%s", strings.Join(push, " "), err, out)
	}
	if after := tm.serverRefs(t); after != before {
		t.Fatalf("the server's refs changed:\n%s\nwere:\n%s", after, before)
	}
}
