package verify

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Finding is one reason a result is rejected. Rule is one of the Rule…
// names below and never changes meaning, so callers and stored receipts can
// branch on it; Path is empty for findings about the result as a whole (the
// limits). A *Finding is also an error.
type Finding struct {
	Rule     string `json:"rule"`
	Path     string `json:"path"`
	Severity string `json:"severity"`
	Detail   string `json:"detail"`
	// Attempt is set on a finding about something the agent tried in its
	// sandbox (an escape attempt): what and when.
	Attempt *Attempt `json:"attempt,omitempty"`
}

// Attempt is what an agent tried, as its sandbox saw it: the sandbox's
// rule that refused or saw it, the system call, how often and when.
type Attempt struct {
	Rule    string    `json:"rule"`
	Syscall string    `json:"syscall"`
	Count   int       `json:"count"`
	First   time.Time `json:"first"`
	Last    time.Time `json:"last"`
}

// Severities, from most to least serious. Critical findings are attacks on
// the host or on git itself; high ones are unsafe or unreviewable content;
// medium ones are policy limits a user may raise.
const (
	SeverityCritical = "critical"
	SeverityHigh     = "high"
	SeverityMedium   = "medium"
)

// Rule names. They are stable: receipts store them.
const (
	RulePathEmpty       = "path-empty"        // the empty path
	RulePathAbsolute    = "path-absolute"     // starts with "/"
	RulePathMalformed   = "path-malformed"    // an empty or "." component, or a trailing "/"
	RulePathDotDot      = "path-dotdot"       // a ".." component
	RulePathDotGit      = "path-dotgit"       // a component that a file system may take for .git
	RulePathBackslash   = "path-backslash"    // a Windows directory separator
	RulePathControlChar = "path-control-char" // a byte below 0x20, or 0x7f
	RulePathInvalidUTF8 = "path-invalid-utf8" // not valid UTF-8
	RuleSymlinkEscape   = "symlink-escape"    // a symlink whose target may leave the tree
	RuleSymlinkDenied   = "symlink-denied"    // any symlink, when policy denies them
	RuleSubmodule       = "submodule"         // a gitlink or a .gitmodules change
	RuleGitmodules      = "gitmodules-unsafe" // a .gitmodules entry that attacks git
	RuleModeSetuid      = "mode-setuid"       // setuid, setgid or sticky bits
	RuleSpecialFile     = "special-file"      // a device, FIFO or socket
	RuleCaseCollision   = "case-collision"    // two paths that are one on a case-folding file system
	RuleLimitFiles      = "limit-files"       // more changed paths than policy allows
	RuleLimitBytes      = "limit-bytes"       // more added or modified bytes than policy allows
	RuleLimitBinary     = "limit-binary"      // more binary files than policy allows
	RuleProtectedPath   = "protected-path"    // a path that policy protects
)

var severities = map[string]string{
	RulePathEmpty:       SeverityHigh,
	RulePathAbsolute:    SeverityCritical,
	RulePathMalformed:   SeverityHigh,
	RulePathDotDot:      SeverityCritical,
	RulePathDotGit:      SeverityCritical,
	RulePathBackslash:   SeverityHigh,
	RulePathControlChar: SeverityHigh,
	RulePathInvalidUTF8: SeverityHigh,
	RuleSymlinkEscape:   SeverityCritical,
	RuleSymlinkDenied:   SeverityMedium,
	RuleSubmodule:       SeverityCritical,
	RuleGitmodules:      SeverityCritical,
	RuleModeSetuid:      SeverityHigh,
	RuleSpecialFile:     SeverityHigh,
	RuleCaseCollision:   SeverityHigh,
	RuleLimitFiles:      SeverityMedium,
	RuleLimitBytes:      SeverityMedium,
	RuleLimitBinary:     SeverityMedium,
	RuleProtectedPath:   SeverityHigh,
}

// newFinding fills in the rule's severity.
func newFinding(rule, path, format string, args ...any) *Finding {
	return &Finding{Rule: rule, Path: path, Severity: severities[rule], Detail: fmt.Sprintf(format, args...)}
}

// Error names the rule and the path (C-quoted, since paths that break rules
// often hold control characters), then the detail.
func (f *Finding) Error() string {
	if f.Path == "" {
		return f.Rule + ": " + f.Detail
	}
	return fmt.Sprintf("%s: %q: %s", f.Rule, f.Path, f.Detail)
}

// sortFindings orders findings by path, then rule, then detail, and drops
// exact repeats, so the same result always gives the same list.
func sortFindings(fs []Finding) []Finding {
	slices.SortFunc(fs, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Detail, b.Detail))
	})
	return slices.Compact(fs)
}
