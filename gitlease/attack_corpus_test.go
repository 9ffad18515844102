package gitlease

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lease/git-lease/refs/refstest"
	"github.com/git-lease/git-lease/verify"
)

// TestAttackCorpus runs every malicious agent in testdata/attacks in a
// sandboxed lease. Each script names the rule that must reject it
// ("# want: rule") and may narrow policy ("# policy: TOML"). Each must end
// quarantined for that rule, with the finding recorded, the review branch
// still at the base, and the developer's checkout and branches untouched.
func TestAttackCorpus(t *testing.T) {
	scripts, err := filepath.Glob(filepath.Join("..", "testdata", "attacks", "*.sh"))
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no attack scripts: %v", err)
	}
	for _, script := range scripts {
		t.Run(strings.TrimSuffix(filepath.Base(script), ".sh"), func(t *testing.T) {
			body, err := os.ReadFile(script)
			if err != nil {
				t.Fatal(err)
			}
			want, trustedTOML := header(body)
			if want == "" {
				t.Fatalf("%s has no '# want: rule' line", script)
			}
			repo, dir := sandboxRepo(t, map[string]string{"README.md": "base", "src/main.go": "package main"}, trustedTOML)
			refsBefore := refstest.Git(t, dir, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/tags")
			var out bytes.Buffer
			x, err := Start(context.Background(), repo, StartOptions{Mode: Sandboxed, Command: []string{"sh", "-c", string(body)}, Output: &out})
			if x == nil {
				t.Fatalf("start: %v", err)
			}
			if x.Lease.State != Quarantined {
				t.Fatalf("state %s (%s), want quarantined for %s\n%s", x.Lease.State, x.Lease.Reason, want, out.String())
			}
			var rules []string
			for _, f := range x.Lease.Findings {
				rules = append(rules, f.Rule)
			}
			if !strings.Contains(" "+strings.Join(rules, " ")+" ", " "+want+" ") {
				t.Fatalf("findings %v, want %s", rules, want)
			}
			if b, _ := repo.ReadFile(x.Tip, findingsFile, 1<<20); !bytes.Contains(b, []byte(`"rule": "`+want+`"`)) {
				t.Fatalf("findings.json in the lease log lacks %s:\n%s", want, b)
			}
			if patch, err := x.Patch(); want == verify.RuleProtectedPath && (err != nil || !bytes.Contains(patch, []byte("diff --git"))) {
				t.Fatalf("a result quarantined for what it touches keeps no patch for review: %v", err)
			}
			if tip, _ := repo.Ref(x.Lease.ID.BranchRef()); tip.String() != x.Lease.Base {
				t.Fatalf("the review branch moved to %s", tip)
			}
			after := refstest.Git(t, dir, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/tags")
			if strings.ReplaceAll(after, "refs/heads/"+x.Lease.Branch+" "+x.Lease.Base+"\n", "") != refsBefore {
				t.Fatalf("branches changed:\n%s\nwas:\n%s", after, refsBefore)
			}
			if st := refstest.Git(t, dir, "status", "--porcelain"); st != "" {
				t.Fatalf("the checkout changed:\n%s", st)
			}
			if _, err := os.Lstat(filepath.Join(filepath.Dir(dir), "escaped")); err == nil {
				t.Fatalf("the agent wrote outside its tree")
			}
		})
	}
}

// header reads "# want: rule" and "# policy: TOML" lines from a script.
func header(script []byte) (want, trustedTOML string) {
	sc := bufio.NewScanner(bytes.NewReader(script))
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "# want: "); ok {
			want = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "# policy: "); ok {
			trustedTOML += v + "\n"
		}
	}
	return want, trustedTOML
}
