package gitlease

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/sandbox"
	"github.com/git-lease/git-lease/sandbox/bwrap"
)

// runChecks runs each declared check (policy's, then start's --check) in a
// fresh sandbox seeded from the result tree, never on the host, and
// returns their results and bounded logs for the lease log. A check that
// cannot run (no sandbox here) is recorded as skipped, with why.
func (x *Execution) runChecks(ctx context.Context, tree plumbing.Hash, progress io.Writer) ([]CheckResult, map[string][]byte) {
	commands := append(append([]string{}, x.Lease.Policy.Checks...), x.Lease.Checks...)
	results := []CheckResult{}
	files := map[string][]byte{}
	if len(commands) == 0 {
		return results, files
	}
	self, err := os.Executable()
	provider := bwrap.Provider{Self: self}
	if err == nil {
		err = provider.Check()
	}
	for i, command := range commands {
		r := CheckResult{Command: command, Log: fmt.Sprintf("result/checks/%d.log", i+1)}
		if err != nil {
			r.Skipped = x.hostFree(err.Error())
			results = append(results, r)
			continue
		}
		fmt.Fprintf(progress, "lease %s: check %d: %s\n", x.Lease.ID, i+1, command)
		var out bytes.Buffer
		began := time.Now()
		exit, runErr := x.runCheck(ctx, provider, tree, i+1, command, &out)
		r.DurationMS = time.Since(began).Milliseconds()
		if runErr != nil {
			r.Skipped = x.hostFree(runErr.Error())
		}
		r.ExitCode, r.Bound = exit.Code, exit.Bound
		r.Passed = runErr == nil && exit.Code == 0 && exit.Bound == ""
		r.LogBytes = int64(out.Len())
		files[r.Log] = append([]byte{}, headTail(out.Bytes(), maxStoredLog)...) // empty, not nil: nil deletes
		results = append(results, r)
	}
	return results, files
}

// runCheck runs one check in its own sandbox and discards the sandbox.
func (x *Execution) runCheck(ctx context.Context, p sandbox.Provider, tree plumbing.Hash, n int, command string, out io.Writer) (sandbox.Exit, error) {
	spec := x.spec()
	// Its own identity, so that its base reference never stands for the
	// lease's own.
	spec.ID = fmt.Sprintf("%s-check%d", x.Lease.ID, n)
	spec.Dir = filepath.Join(x.RunDir(), "checks", fmt.Sprint(n))
	spec.BaseTree = tree.String()
	spec.ExportBase = func(dir string) error { return x.Repo.ExportTree(tree, dir) }
	spec.ExportLayer = func(from, dir string, marks sandbox.LayerMarks) error {
		return x.Repo.ExportLayer(plumbing.NewHash(from), tree, dir, marks)
	}
	spec.Distance = func(from string) (int, error) { return treeDistance(x.Repo, plumbing.NewHash(from), tree) }
	defer p.Discard(context.Background(), spec)
	if err := p.Create(ctx, spec); err != nil {
		return sandbox.Exit{}, err
	}
	proc, err := p.Launch(ctx, spec, sandbox.Command{Argv: []string{"sh", "-c", command}, Env: cacheEnv(x.Lease.Policy.Caches), Output: out})
	if err != nil {
		return sandbox.Exit{}, err
	}
	if err := proc.Release(); err != nil {
		proc.Wait()
		return sandbox.Exit{}, err
	}
	return proc.Wait()
}

// CountChecks counts checks that passed, failed, and could not run.
func CountChecks(checks []CheckResult) (passed, failed, skipped int) {
	for _, c := range checks {
		switch {
		case c.Skipped != "":
			skipped++
		case c.Passed:
			passed++
		default:
			failed++
		}
	}
	return passed, failed, skipped
}

// checkSummary is ", checks: 2 passed, 1 failed" (or nothing without checks).
func checkSummary(checks []CheckResult) string {
	passed, failed, skipped := CountChecks(checks)
	if len(checks) == 0 {
		return ""
	}
	s := fmt.Sprintf("; checks: %d passed, %d failed", passed, failed)
	if skipped > 0 {
		s += fmt.Sprintf(", %d skipped", skipped)
	}
	return s
}
