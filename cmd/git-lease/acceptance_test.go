package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestAcceptance runs the spec's acceptance, scripts/acceptance.sh, with
// this test's git-lease and the Herdr stand-in: two writing agents from
// one base, isolated from the host, the network and each other; git-lease
// and Herdr restarted while they work; reconcile, review, one rejected and
// one applied, cleanup confirmed. The script says which step failed.
func TestAcceptance(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sandboxed leases")
	}
	tmp := t.TempDir()
	cmd := exec.Command("bash", filepath.Join("..", "..", "scripts", "acceptance.sh"))
	cmd.Env = append(os.Environ(), "ACCEPTANCE_BIN="+binDir, "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasSuffix(string(out), "acceptance: passed\n") {
		t.Fatalf("scripts/acceptance.sh: %v\n%s", err, out)
	}
	// The leases ran on the records gateFixture made: no gate ran again.
	if strings.Contains(string(out), "gate:") {
		t.Errorf("the acceptance run ran the gate again:\n%s", out)
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("the acceptance run left %v behind", left)
	}
}
