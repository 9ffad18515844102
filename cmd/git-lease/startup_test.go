package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPackageInitsStayCheap runs the built binary as the sandbox's init
// (which exits at once without its spec) with Go's init trace, and checks
// that no package of git-lease allocates more than 64 KiB before main:
// every start of the binary pays its packages' inits, and a lease start
// pays two (the command and the sandbox's init). A regular expression
// with a counted repetition (x{0,127}) compiled at package level cost
// 180 KiB and milliseconds.
func TestPackageInitsStayCheap(t *testing.T) {
	cmd := exec.Command(filepath.Join(binDir, "git-lease"), "__sandbox-init")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, _ := cmd.CombinedOutput() // it fails: no spec
	seen := 0
	for _, line := range strings.Split(string(out), "\n") {
		// init github.com/git-lease/git-lease/verify @248 ms, 0.22 ms clock, 25752 bytes, 264 allocs
		f := strings.Fields(line)
		if len(f) < 9 || f[0] != "init" || !strings.HasPrefix(f[1], "github.com/git-lease/") {
			continue
		}
		seen++
		bytes, err := strconv.Atoi(f[7])
		if err != nil {
			t.Fatalf("unexpected init trace line %q", line)
		}
		if bytes > 64<<10 {
			t.Errorf("package %s allocates %d bytes in its init", f[1], bytes)
		}
	}
	if seen == 0 {
		t.Fatalf("no init trace of git-lease's packages in:\n%s", out)
	}
}
