package gitlease

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/git-lease/git-lease/verify"
)

// TestManyFindingsAreCappedAndCounted is a result that breaks a rule 250
// times: the record and findings.json keep the first maxStoredFindings,
// the record counts the rest, and the listing of findings says how many.
func TestManyFindingsAreCappedAndCounted(t *testing.T) {
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, "")
	x, out := runLocal(t, repo, `mkdir .github; for i in $(seq 250); do echo x > .github/f$i; done`)
	if x.Lease.State != Quarantined {
		t.Fatalf("state %s (%s)\n%s", x.Lease.State, x.Lease.Reason, out)
	}
	if len(x.Lease.Findings) != maxStoredFindings || x.Lease.FindingsOmitted != 250-maxStoredFindings {
		t.Fatalf("the record keeps %d findings and counts %d more, want %d and %d",
			len(x.Lease.Findings), x.Lease.FindingsOmitted, maxStoredFindings, 250-maxStoredFindings)
	}
	b, err := repo.ReadFile(x.Tip, findingsFile, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var stored []verify.Finding
	if err := json.Unmarshal(b, &stored); err != nil || len(stored) != maxStoredFindings {
		t.Fatalf("findings.json holds %d findings (%v), want %d", len(stored), err, maxStoredFindings)
	}
	list, err := Findings(repo)
	if err != nil {
		t.Fatal(err)
	}
	last := list[len(list)-1]
	if len(list) != maxStoredFindings+1 || last.Rule != RuleFindingsOmitted || !strings.HasPrefix(last.Detail, "150 more findings") {
		t.Fatalf("the listing has %d entries, the last %+v; want the stored ones and a count of the rest", len(list), last)
	}
}
