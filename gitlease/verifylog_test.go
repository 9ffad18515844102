package gitlease

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/refs/refstest"
	"github.com/git-lease/git-lease/verify"
)

// TestCheckRecordedCatchesAPatchThatTellsAnotherStory: a log whose patch
// matches its recorded digest but not the result tree (or not the base),
// or whose result.json is not the record's result, fails the one result check that verify, review, apply and the server
// hook share. The digest is made to match, as a signer who rewrote the
// record would.
func TestCheckRecordedCatchesAPatchThatTellsAnotherStory(t *testing.T) {
	repo, dir := sandboxRepo(t, map[string]string{"a.txt": "a\n"}, "")
	x := reviewLease(t, repo, "echo A > a.txt")
	var problems []string
	problem := func(f string, a ...any) { problems = append(problems, fmt.Sprintf(f, a...)) }
	if checkRecorded(context.Background(), repo, x.Tip, x.Lease, problem); len(problems) > 0 {
		t.Fatalf("the untouched result: %v", problems)
	}
	for _, tc := range []struct{ name, file, content, want string }{
		{"applies, to another tree", patchFile, "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+pwned\n", "base + patch gives tree"},
		{"does not apply", patchFile, "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-not the base\n+A\n", "the patch does not apply to the base"},
		{"result.json says otherwise", resultFile, strings.Replace(string(x.Lease.Result.marshal()), `"status": "ok"`, `"status": "failed"`, 1), "result/result.json is not the record's result"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			problems = nil
			file := filepath.Join(t.TempDir(), "patch")
			must(t, os.WriteFile(file, []byte(tc.content), 0o644))
			blob := refstest.Git(t, dir, "hash-object", "-w", file)
			// The log's tree with the patch replaced, built in an index of
			// the test's own.
			t.Setenv("GIT_INDEX_FILE", filepath.Join(t.TempDir(), "index"))
			refstest.Git(t, dir, "read-tree", x.Tip.String()+"^{tree}")
			refstest.Git(t, dir, "update-index", "--cacheinfo", "100644,"+blob+","+tc.file)
			tree := refstest.Git(t, dir, "write-tree")
			os.Unsetenv("GIT_INDEX_FILE")
			tip := refstest.Git(t, dir, "commit-tree", tree, "-p", x.Tip.String(), "-m", "tampered")
			l := *x.Lease
			if tc.file == patchFile {
				r := *l.Result
				r.PatchDigest = verify.PatchDigest([]byte(tc.content))
				l.Result = &r
			}
			checkRecorded(context.Background(), repo, plumbing.NewHash(tip), &l, problem)
			if !strings.Contains(strings.Join(problems, "\n"), tc.want) {
				t.Fatalf("problems %q do not say %q", problems, tc.want)
			}
		})
	}
}
