package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/git-lease/git-lease/gitlease/escape"
	"github.com/urfave/cli/v2"
)

func showCommand() *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "show one lease: state, base, result and where to review it",
		ArgsUsage: "ID",
		Description: `Show prints what a reviewer needs first: state, mode, base, the files changed
and where to look. ID may be any unique prefix of 4 or more characters.

Example:
   git lease show 3f9c --json`,
		Flags: []cli.Flag{jsonFlag},
		Action: func(c *cli.Context) error {
			id, err := oneID(c)
			if err != nil {
				return err
			}
			return runShow(id, c.Bool("json"))
		},
	}
}

func runShow(prefix string, asJSON bool) error {
	repo, err := openRepo()
	if err != nil {
		return err
	}
	x, err := gitlease.LoadPrefix(repo, prefix)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(os.Stdout, toJSON(x))
	}
	printLease(os.Stdout, x)
	return printTree(os.Stdout, x)
}

// printTree prints, for a lease with a parent or children, the tree of its
// mission's leases, marking this one.
func printTree(w io.Writer, x *gitlease.Execution) error {
	l := x.Lease
	if l.Parent == "" && len(l.Children) == 0 {
		return nil
	}
	all, _, err := gitlease.ListAll(x.Repo)
	if err != nil {
		return err
	}
	var family []leaseJSON
	for _, y := range all {
		if y.Lease.Mission == l.Mission {
			family = append(family, toJSON(y))
		}
	}
	family, depth := asTree(family)
	fmt.Fprintf(w, "tree:\n")
	for i, y := range family {
		mark := ""
		if y.ID == l.ID {
			mark = "  <- this lease"
		}
		fmt.Fprintf(w, "  %s%s %s%s\n", strings.Repeat("  ", depth[i]), y.ID, y.State, mark)
	}
	return nil
}

// printLease leads with what a reviewer needs: state and why, mode, base,
// failing checks, the files changed, findings; then where to look. Free
// text (an agent's paths, a reason quoting its errors, a fetched lease's
// mission and command) goes through escape.Line: one line each, and no
// terminal controls.
func printLease(w io.Writer, x *gitlease.Execution) {
	l := x.Lease
	fmt.Fprintf(w, "lease %s: %s\n", l.ID, l.State)
	if l.Reason != "" {
		fmt.Fprintf(w, "reason:   %s\n", escape.Line(l.Reason))
	}
	fmt.Fprintf(w, "mode:     %s\n", modeLabel(l))
	base := l.Base
	switch {
	case l.SnapshotOf != "":
		base += fmt.Sprintf(" (snapshot of uncommitted changes on %s)", l.SnapshotOf[:12])
	case l.BaseRef != "":
		base += " (" + escape.Line(strings.TrimPrefix(l.BaseRef, "refs/heads/")) + ")"
	}
	fmt.Fprintf(w, "base:     %s\n", base)
	if l.RebasedFrom != "" {
		fmt.Fprintf(w, "rebased:  from lease %s\n", l.RebasedFrom)
	}
	if l.RebasedTo != "" {
		fmt.Fprintf(w, "rebased:  as lease %s, which is the one to review (git lease show %s)\n", l.RebasedTo, l.RebasedTo.Short())
	}
	if r := l.Result; r != nil {
		if len(r.Checks) > 0 {
			fmt.Fprintf(w, "checks:   %s\n", checksLine(r.Checks))
			for i, c := range r.Checks {
				fmt.Fprintf(w, "  %-4s %s%s\n", checkMark(c), escape.Line(c.Command), checkDetail(c, i+1, string(l.ID)))
			}
		}
		fmt.Fprintf(w, "result:   %s (%s)\n", escape.Line(r.Summary), r.Status)
		for _, f := range r.Manifest {
			fmt.Fprintf(w, "  %s %s\n", f.Status, escape.Line(f.Path))
		}
	}
	if n := len(l.Findings) + l.FindingsOmitted; n > 0 {
		fmt.Fprintf(w, "findings: %d (git lease findings %s)\n", n, l.ID.Short())
		shown := min(len(l.Findings), 10)
		for _, f := range l.Findings[:shown] {
			fmt.Fprintf(w, "  %s %s %q: %s\n", f.Severity, f.Rule, f.Path, escape.Line(f.Detail))
		}
		if l.State == gitlease.Review && x.AwaitingAcceptance() {
			fmt.Fprintf(w, "  policy lets these wait for you: review them, then git lease apply --accept %s\n", l.ID.Short())
		}
		if more := n - shown; more > 0 {
			fmt.Fprintf(w, "  … and %d more", more)
			if l.FindingsOmitted > 0 {
				fmt.Fprintf(w, ", %d of them not recorded", l.FindingsOmitted)
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintf(w, "branch:   %s\n", l.Branch)
	if x.StartedElsewhere() {
		fmt.Fprintf(w, "worktree: none here: started in another clone (fetched); its runner, sandbox and worktree are there\n")
	} else {
		fmt.Fprintf(w, "worktree: %s\n", x.Worktree())
	}
	if l.Mission != "" {
		fmt.Fprintf(w, "mission:  %s\n", escape.Line(l.Mission))
	}
	if l.Parent != "" {
		fmt.Fprintf(w, "parent:   %s\n", l.Parent)
	}
	if l.ReadOnlyWork {
		fmt.Fprintf(w, "/work:    read-only (start --read-only): no result; the agent's output is the evidence (git lease logs %s)\n", l.ID.Short())
	}
	fmt.Fprintf(w, "command:  %s\n", escape.Line(strings.Join(l.Command, " ")))
	if l.Dir != "" {
		fmt.Fprintf(w, "dir:      %s/ (where the agent started)\n", escape.Line(l.Dir))
	}
	if l.AgentPreset != "" {
		preset := l.AgentPreset
		if len(l.AgentEnv) > 0 {
			preset += "; env " + strings.Join(l.AgentEnv, ", ")
		}
		if len(l.AgentHomeFiles) > 0 {
			preset += "; home files " + strings.Join(l.AgentHomeFiles, ", ")
		}
		fmt.Fprintf(w, "preset:   %s\n", escape.Line(preset))
	}
	if n := l.Network; n != nil || len(l.Policy.Network.Allow) > 0 {
		fmt.Fprintf(w, "network:  %s\n", escape.Line(networkLine(l)))
	}
	for _, c := range l.Credentials {
		fmt.Fprintf(w, "credential: %s (%s, %s)\n", c.Name, c.Kind, c.Fingerprint)
	}
	if l.Enforcement != "" {
		fmt.Fprintf(w, "bounds:   %s\n", l.Enforcement)
	}
	if e := l.Escapes; e != nil {
		fmt.Fprintf(w, "escapes:  %s\n", escape.Line(escapesLine(l)))
	}
	if c := l.Cleanup; c != nil && c.State != gitlease.CleanupConfirmed {
		fmt.Fprintf(w, "cleanup:  %s (git lease cleanup %s tries again)\n", c.State, l.ID.Short())
		for _, item := range c.Receipt {
			if item.Action == gitlease.ActionFailed {
				fmt.Fprintf(w, "  %s: %s\n", item.Resource, escape.Line(x.Localize(item.Detail)))
			}
		}
	}
	if a := l.Agent; a != nil {
		fmt.Fprintf(w, "agent:    exited %d, %d bytes of output\n", a.Code, a.OutputBytes)
	}
	if r := l.Result; r != nil && r.PatchDigest != "" {
		fmt.Fprintf(w, "patch:    %s\n", r.PatchDigest)
	}
	for _, a := range resultArtifacts(l) {
		if a.Missing != "" {
			fmt.Fprintf(w, "artifact: %s (not kept: %s)\n", escape.Line(a.Path), escape.Line(a.Missing))
		} else {
			fmt.Fprintf(w, "artifact: %s (%d bytes, sha256:%s)\n", escape.Line(a.Path), a.Size, a.SHA256)
		}
	}
}

// escapesLine says what the sandbox recorded of the agent's escape
// attempts, and how.
func escapesLine(l *gitlease.Lease) string {
	e := l.Escapes
	if e.Recording == "" {
		return "not recorded: " + e.Unavailable
	}
	if e.Unavailable != "" {
		e.Recording += "; refused calls not recorded: " + e.Unavailable
	}
	if e.OpensUnrecorded != "" {
		e.Recording += "; writes by open not recorded: " + e.OpensUnrecorded
	}
	if e.Attempts == 0 {
		return "none (recorded by " + e.Recording + ")"
	}
	critical := 0
	for _, f := range l.Findings {
		if f.Rule == gitlease.RuleEscapeAttempt && f.Severity == "critical" {
			critical++
		}
	}
	return fmt.Sprintf("%d distinct attempt(s), %d critical (recorded by %s; git lease findings --rule %s %s)",
		e.Attempts+e.Omitted, critical, e.Recording, gitlease.RuleEscapeAttempt, l.ID.Short())
}

// networkLine is the lease's allowlist and what its network did.
func networkLine(l *gitlease.Lease) string {
	s := "none"
	if len(l.Policy.Network.Allow) > 0 {
		s = strings.Join(l.Policy.Network.Allow, ", ")
	}
	if n := l.Network; n != nil {
		s += fmt.Sprintf(" (%d allowed, %d failed, %d refused, %d bytes in, %d out", n.Allowed, n.Failed, n.Refused, n.BytesDown, n.BytesUp)
		if b := n.Bypass.NoRoute + n.Bypass.ClosedUDP; b > 0 {
			s += fmt.Sprintf("; %d sent around the proxy", b)
		}
		s += ")"
	}
	return s
}

func resultArtifacts(l *gitlease.Lease) []gitlease.Artifact {
	if l.Result == nil {
		return nil
	}
	return l.Result.Artifacts
}

// checksLine puts failures first: "1 of 2 FAILED", "2 passed" or
// "1 passed, 1 skipped".
func checksLine(checks []gitlease.CheckResult) string {
	passed, failed, skipped := gitlease.CountChecks(checks)
	s := fmt.Sprintf("%d passed", passed)
	if failed > 0 {
		s = fmt.Sprintf("%d of %d FAILED", failed, len(checks))
	}
	if skipped > 0 {
		s += fmt.Sprintf(", %d skipped", skipped)
	}
	return s
}

func checkMark(c gitlease.CheckResult) string {
	switch {
	case c.Skipped != "":
		return "SKIP"
	case c.Passed:
		return "pass"
	}
	return "FAIL"
}

func checkDetail(c gitlease.CheckResult, n int, id string) string {
	switch {
	case c.Skipped != "":
		return " (" + escape.Line(c.Skipped) + ")"
	case c.Bound != "":
		return fmt.Sprintf(" (stopped at the %s bound; git lease logs --check %d %s)", c.Bound, n, id[:8])
	case !c.Passed:
		return fmt.Sprintf(" (exit %d; git lease logs --check %d %s)", c.ExitCode, n, id[:8])
	}
	return ""
}
