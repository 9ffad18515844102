package agentfs

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// npmDatabase writes a delta database with the AgentFS npm SDK
// (agentfs-sdk@0.6.4, its own native database engine) through
// testdata/agentfs/npm-write.mjs, or skips the test saying what is missing.
// scripts/test.sh installs the SDK into the directory that
// $AGENTFS_SDK_MODULES names.
func npmDatabase(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the AgentFS npm SDK test needs node (20 or later) and agentfs-sdk@0.6.4, which scripts/test.sh installs with npm")
	}
	modules := os.Getenv("AGENTFS_SDK_MODULES")
	if _, err := os.Stat(filepath.Join(modules, "agentfs-sdk", "package.json")); modules == "" || err != nil {
		t.Skip("$AGENTFS_SDK_MODULES does not name a node_modules directory with agentfs-sdk@0.6.4: scripts/test.sh installs it with npm")
	}
	_, here, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(here), "..", "..", "testdata", "agentfs", "npm-write.mjs")
	db := filepath.Join(t.TempDir(), "npm.db")
	if out, err := exec.Command(node, script, modules, db).CombinedOutput(); err != nil {
		t.Fatalf("the npm SDK did not write its database: %v\n%s", err, out)
	}
	return db
}

// TestReadsWhatTheNPMSDKWrote reads a database the npm SDK wrote (its WAL
// not checkpointed: the SDK leaves it so) over a base that has one of its
// files already.
func TestReadsWhatTheNPMSDKWrote(t *testing.T) {
	db := npmDatabase(t)
	base := writeBase(t, "edit.txt:644:before\n", "keep.txt:644:kept\n")
	src, err := Read(db, base)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	got := listing(t, src)
	want := `file big.bin 644 "` + strings.Repeat(`\a`, 10000) + `"
file edit.txt 644 "changed by the npm SDK\n"
symlink link -> edit.txt
directory src
file src/main.go 644 "package main\n\nfunc main() {}\n"
`
	if got != want {
		t.Errorf("the delta reads\n%s\nwant\n%s", got, want)
	}
}
