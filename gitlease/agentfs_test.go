package gitlease

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/git-lease/git-lease/sandbox/agentfs"
)

// agentfsOrSkip skips a test where the agentfs provider cannot run.
func agentfsOrSkip(t *testing.T) {
	t.Helper()
	if err := (agentfs.Provider{}).Check(); err != nil {
		t.Skip(err)
	}
}

// compareAgent is an agent that does every kind of change, including a
// build-like burst of files and a directory deleted and made again.
const compareAgent = `set -e
echo changed >> README
rm gone.txt
mkdir -p src/new && printf 'package x\n' > src/new/x.go
mv src/old.go src/renamed.go
chmod +x run.sh
ln -s README link
for i in $(seq 1 200); do echo $i > gen/f$i.txt; done
rm -r tree && mkdir tree && echo again > tree/y
printf 'same\n' > same.txt
`

// TestAgentFSAndOverlayGiveTheSameResult runs one agent on the overlay
// provider and on the agentfs provider, from the same base, and compares
// their verified results.
func TestAgentFSAndOverlayGiveTheSameResult(t *testing.T) {
	agentfsOrSkip(t)
	files := map[string]string{"README": "hello\n", "gone.txt": "bye\n", "src/old.go": "package old\n",
		"run.sh": "#!/bin/sh\n", "tree/x": "x\n", "same.txt": "same\n", "gen/keep": "k\n"}
	results := map[string]*Result{}
	for _, provider := range []string{"agentfs", "bwrap"} {
		repo, _ := sandboxRepo(t, files, "provider = \""+provider+"\"\n")
		x, out := runAgent(t, repo, compareAgent)
		if x.Lease.State != Review || x.Lease.Result == nil || x.Lease.Result.Status != "ok" {
			t.Fatalf("%s: lease is %s (%s)\n%s", provider, x.Lease.State, x.Lease.Reason, out)
		}
		if x.Lease.Provider != provider {
			t.Fatalf("the lease ran on %s, not %s", x.Lease.Provider, provider)
		}
		results[provider] = x.Lease.Result
		if provider == "agentfs" {
			checkKeptDatabase(t, x)
		}
	}
	a, b := results["bwrap"], results["agentfs"]
	if a.Tree != b.Tree || a.PatchDigest != b.PatchDigest || !reflect.DeepEqual(a.Manifest, b.Manifest) {
		t.Errorf("the results differ:\noverlay: %s %s %v\nagentfs: %s %s %v", a.Tree, a.Summary, a.Manifest, b.Tree, b.Summary, b.Manifest)
	}
	if len(a.Manifest) != 209 {
		t.Errorf("the result changes %d files, want 209: %s", len(a.Manifest), a.Summary)
	}
}

// checkKeptDatabase cleans up an agentfs lease and checks that its
// database is kept, named in the cleanup receipt, and still reads as the
// delta the result came from.
func checkKeptDatabase(t *testing.T, x *Execution) {
	t.Helper()
	c, _, err := cleanupHere(t.Context(), x)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(c.Receipt, func(item CleanupItem) bool { return item.Resource == "agentfs-record" })
	if i < 0 || c.Receipt[i].Action != "kept" || !strings.Contains(c.Receipt[i].Detail, "/agentfs/"+string(x.Lease.ID)+".db (") {
		t.Fatalf("the cleanup receipt does not name the kept database: %+v", c.Receipt)
	}
	kept := x.Repo.LeaseDir("agentfs", string(x.Lease.ID)+".db")
	if _, err := os.Stat(kept); err != nil {
		t.Fatalf("the database is not kept: %v", err)
	}
	if _, err := os.Stat(x.RunDir()); err == nil {
		t.Fatalf("the run directory outlived cleanup")
	}
}
