package gitlease

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/git-lease/git-lease/sandbox"
	"github.com/git-lease/git-lease/verify"
)

// RuleEscapeAttempt is something the agent tried that its sandbox refuses
// (see sandbox.EscapeRecorder); the path is the call, with its decisive
// arguments, or the path the agent named. It is stable: records store it.
const RuleEscapeAttempt = "escape-attempt"

// EscapeRecord is how the sandbox recorded the agent's escape attempts, in
// lease.json; the attempts themselves are findings.
type EscapeRecord struct {
	// Recording says how; Unavailable, when it is empty, why nothing was
	// recorded.
	Recording   string `json:"recording,omitempty"`
	Unavailable string `json:"unavailable,omitempty"`
	// OpensUnrecorded says why writes outside that begin with an open
	// went unrecorded, wholly or in part.
	OpensUnrecorded string `json:"opens_unrecorded,omitempty"`
	// Attempts counts the distinct attempts; Omitted those beyond the
	// sandbox's record, which are not findings.
	Attempts int `json:"attempts"`
	Omitted  int `json:"omitted,omitempty"`
}

// escapeSeverity rates the attempts of each rule of the sandbox. Critical
// ones reach for the kernel's or the host's control (a namespace, a mount,
// kernel code, another terminal's input) and quarantine the result unless
// policy tolerates them ([bwrap] tolerate_escapes); high ones look for
// what the host keeps from the sandbox; medium ones are what ordinary
// tools probe for and do without (io_uring, perf counters, the clock).
var escapeSeverity = map[string]string{
	"keyring": verify.SeverityCritical, "mount": verify.SeverityCritical, "namespaces": verify.SeverityCritical,
	"bpf": verify.SeverityCritical, "modules": verify.SeverityCritical, "kexec": verify.SeverityCritical,
	"open_by_handle": verify.SeverityCritical, "tiocsti": verify.SeverityCritical, "ioport": verify.SeverityCritical,
	"admin":       verify.SeverityCritical,
	"userfaultfd": verify.SeverityHigh, "syslog": verify.SeverityHigh, "fanotify": verify.SeverityHigh,
	"obsolete": verify.SeverityHigh,
	"perf":     verify.SeverityMedium, "io_uring": verify.SeverityMedium, "clock": verify.SeverityMedium,
	"personality": verify.SeverityMedium,
	// Decoys at the home's credential paths and the docker socket: the
	// agent looked for the host's secrets, which the sandbox keeps out of
	// its reach.
	"secrets": verify.SeverityHigh,
	// The environment of the sandbox's PID 1 or its network forwarder:
	// where a container keeps its secrets, and here nothing but the
	// lease's own variables.
	"environ": verify.SeverityMedium,
	// Writes outside the agent's places, which the kernel refuses: tools
	// that install into /usr do it too.
	"write-outside": verify.SeverityMedium,
}

// escapeEvidence is the record of proc's escape attempts and their
// findings, with credential values redacted. The record is nil when the
// sandbox records none (a provider without a recorder).
func escapeEvidence(proc sandbox.Process, r redactor) (*EscapeRecord, []verify.Finding) {
	er, ok := proc.(sandbox.EscapeRecorder)
	if !ok {
		return nil, nil
	}
	e := er.Escapes()
	rec := &EscapeRecord{Recording: e.Recording, Unavailable: e.Unavailable, OpensUnrecorded: e.OpensUnrecorded, Attempts: len(e.Attempts), Omitted: e.Omitted}
	var findings []verify.Finding
	for _, a := range e.Attempts {
		severity, ok := escapeSeverity[a.Rule]
		if !ok {
			severity = verify.SeverityHigh
		}
		findings = append(findings, verify.Finding{
			Rule: RuleEscapeAttempt, Path: r.string(a.Call), Severity: severity,
			Detail:  fmt.Sprintf("%s: %s, %d time(s)", a.Rule, a.Syscall, a.Count),
			Attempt: &verify.Attempt{Rule: a.Rule, Syscall: a.Syscall, Count: a.Count, First: a.First, Last: a.Last},
		})
	}
	// The most severe first; the refused calls and the decoys are seen by
	// two watchers, so the order they were seen in is not the order made.
	rank := map[string]int{verify.SeverityCritical: 0, verify.SeverityHigh: 1, verify.SeverityMedium: 2}
	slices.SortStableFunc(findings, func(a, b verify.Finding) int {
		return cmp.Or(cmp.Compare(rank[a.Severity], rank[b.Severity]), strings.Compare(a.Attempt.Rule, b.Attempt.Rule), strings.Compare(a.Path, b.Path))
	})
	if e.Omitted > 0 {
		findings = append(findings, verify.Finding{Rule: RuleEscapeAttempt, Path: "…", Severity: verify.SeverityHigh,
			Detail: fmt.Sprintf("%d more distinct attempts, not recorded one by one", e.Omitted)})
	}
	return rec, findings
}

// quarantiningEscapes are the lease's critical escape attempts that policy
// does not tolerate: a result of an agent that made any is quarantined.
func (x *Execution) quarantiningEscapes() []verify.Finding {
	var out []verify.Finding
	for _, f := range x.Lease.Findings {
		if f.Rule == RuleEscapeAttempt && f.Severity == verify.SeverityCritical && f.Attempt != nil &&
			!slices.Contains(x.Lease.Policy.Bwrap.TolerateEscapes, f.Attempt.Rule) {
			out = append(out, f)
		}
	}
	return out
}

// EscapeAttempts counts the distinct escape attempts the lease's sandbox
// recorded.
func (l *Lease) EscapeAttempts() int {
	if l.Escapes == nil {
		return 0
	}
	return l.Escapes.Attempts + l.Escapes.Omitted
}
