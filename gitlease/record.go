package gitlease

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/git-lease/git-lease/gitlease/policy"
	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/sandbox"
	"github.com/git-lease/git-lease/verify"
)

// RecordVersion is the version of lease.json written today.
const RecordVersion = 1

// Mode is how a lease is isolated.
type Mode string

// The modes. TrustedLocal is never a sandbox and is always shown as such.
const (
	Sandboxed    Mode = "sandboxed"
	TrustedLocal Mode = "trusted_local"
)

// Lease is the whole current record of one lease, stored as lease.json in
// the newest commit of its log. It holds public identifiers only: no local
// paths and no secrets.
type Lease struct {
	Version int `json:"version"`
	// Seq is the number of this record's entry in the log (1 for the
	// first), so that a log with an entry taken out does not verify.
	Seq       int     `json:"seq"`
	ID        refs.ID `json:"id"`
	Mode      Mode    `json:"mode"`
	Sandboxed bool    `json:"sandboxed"`
	Provider  string  `json:"provider"`
	State     State   `json:"state"`
	Base      string  `json:"base"`
	BaseRef   string  `json:"base_ref,omitempty"`
	// SnapshotOf is set when the base is a snapshot of uncommitted changes:
	// the commit (HEAD then) that the snapshot's parent is.
	SnapshotOf string `json:"snapshot_of,omitempty"`
	Branch     string `json:"branch"`
	Mission    string `json:"mission,omitempty"`
	// Parent is the lease this one is a child of (start --parent);
	// Children, the leases started as its children, in order.
	Parent   refs.ID   `json:"parent,omitempty"`
	Children []refs.ID `json:"children,omitempty"`
	// ReadOnlyWork is set for start --read-only: the agent's /work was its
	// base, read-only, so its result is empty and its output the evidence.
	ReadOnlyWork bool     `json:"read_only_work,omitempty"`
	Command      []string `json:"command"`
	// Dir is where the agent starts, relative to the top of the tree
	// (slash-separated; empty for the top): the directory start ran in,
	// when the base has it.
	Dir       string    `json:"dir,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Policy is the effective policy: names of credentials, never values.
	Policy       *policy.Effective `json:"policy"`
	PolicyDigest string            `json:"policy_digest"`
	// Credentials are the credentials the agent received: names and
	// fingerprints, never values.
	Credentials []CredentialRecord `json:"credentials,omitempty"`
	// Network is the bounded record of the lease's network.
	Network *NetworkRecord `json:"network,omitempty"`
	// Escapes says how the sandbox recorded the agent's escape attempts,
	// which are findings (RuleEscapeAttempt).
	Escapes *EscapeRecord `json:"escapes,omitempty"`
	// Enforcement says how the sandbox enforced the resource bounds.
	Enforcement string `json:"enforcement,omitempty"`
	// Reason says why the lease failed, was quarantined or canceled.
	Reason string `json:"reason,omitempty"`
	// Checks and Artifacts are what start was asked for beyond policy:
	// extra check commands, and workspace files to keep.
	Checks    []string `json:"checks,omitempty"`
	Artifacts []string `json:"artifacts,omitempty"`
	// AgentPreset is the agent preset the lease was started with (--agent).
	AgentPreset string `json:"agent_preset,omitempty"`
	// AgentEnv and AgentHomeFiles are the names of the preset's
	// environment and the paths of its home files (values are trusted
	// policy's, not recorded); the runner refuses a preset that changed.
	AgentEnv       []string `json:"agent_env,omitempty"`
	AgentHomeFiles []string `json:"agent_home_files,omitempty"`
	// Agent is how the agent's run ended.
	Agent *AgentRun `json:"agent,omitempty"`
	// PartialCollect is set when the user asked git lease collect --partial
	// for what a canceled or failed agent left: that result goes to review
	// like any other, though Agent says the agent did not finish.
	PartialCollect bool `json:"partial_collect,omitempty"`
	// Result is the collected result, once there is one.
	Result *Result `json:"result,omitempty"`
	// Findings are the security findings about this lease: rejected
	// paths, refused connections. They are also in findings.json. A record
	// keeps the first maxStoredFindings; FindingsOmitted counts the rest.
	Findings        []verify.Finding `json:"findings,omitempty"`
	FindingsOmitted int              `json:"findings_omitted,omitempty"`
	// Receipts are the identities of the provider and supervisor that ran
	// the lease, as they reported them.
	Receipts []Receipt `json:"receipts,omitempty"`
	// Applied says where and what was applied.
	Applied *Application `json:"applied,omitempty"`
	// RebasedFrom is the lease this one re-made on a newer base.
	RebasedFrom refs.ID `json:"rebased_from,omitempty"`
	// RebasedTo is the lease a rebase of this one made, its successor: it
	// is the one to review now.
	RebasedTo refs.ID `json:"rebased_to,omitempty"`
	// RebaseConflicts lists the paths a rebase of this lease could not merge.
	RebaseConflicts []string `json:"rebase_conflicts,omitempty"`
	// Cleanup is the state of the lease's runtime resources.
	Cleanup *Cleanup `json:"cleanup,omitempty"`
	// Supervisor is the runner's endpoint, bound before the agent is prompted.
	Supervisor *sandbox.Endpoint `json:"supervisor,omitempty"`
	// Prompt is what the agent was asked: always its digest, the text
	// unless it was private.
	Prompt *Prompt `json:"prompt,omitempty"`
	// Activity is the agent's live state while it runs.
	Activity *Activity `json:"activity,omitempty"`
	// ActivityUnrecorded counts the changes of the agent's state that the
	// runner saw and did not record: coalesced into a later one (at most
	// one activity event a second), or past the cap on activity events.
	ActivityUnrecorded int `json:"activity_unrecorded,omitempty"`
}

// Prompt records the prompt given to the agent.
type Prompt struct {
	SHA256 string `json:"sha256"`
	Text   string `json:"text,omitempty"`
	TTY    bool   `json:"tty,omitempty"`
}

// Activity is the agent's state as its supervisor last saw it: working,
// blocked (with the question, when known) or done.
type Activity struct {
	State   string    `json:"state"`
	Message string    `json:"message,omitempty"`
	Since   time.Time `json:"since"`
}

// Application records an apply: the branch that moved and to what. With
// --only, Paths lists what was promoted and Commit is the promoted commit
// (its manifest is result/promoted.json in the log).
type Application struct {
	Target string   `json:"target"`
	From   string   `json:"from"`
	Commit string   `json:"commit"`
	Paths  []string `json:"paths,omitempty"`
	// Accepted are the findings apply was told to accept ("rule path"),
	// under policy's result.accept_at_apply.
	Accepted []string `json:"accepted,omitempty"`
}

// Cleanup states: a lease is terminal only when its cleanup is confirmed.
const (
	CleanupPending   = "pending"
	CleanupConfirmed = "confirmed"
	CleanupFailed    = "failed"
)

// Cleanup is the cleanup state and receipt: what was removed and how each
// removal was confirmed.
type Cleanup struct {
	State   string        `json:"state"`
	Receipt []CleanupItem `json:"receipt"`
}

// CleanupAction is what cleanup did with one resource.
type CleanupAction string

const (
	ActionRemoved  CleanupAction = "removed"
	ActionAbsent   CleanupAction = "absent"   // nothing was there
	ActionKept     CleanupAction = "kept"     // it holds what nobody recorded
	ActionFailed   CleanupAction = "failed"   // Detail says why
	ActionRecorded CleanupAction = "recorded" // what it held is in the log
	ActionStopped  CleanupAction = "stopped"  // its processes were stopped
)

// CleanupItem is one runtime resource of a lease and what cleanup did.
type CleanupItem struct {
	Resource string        `json:"resource"` // sandbox, base, review-worktree, supervisor …
	Action   CleanupAction `json:"action"`
	Detail   string        `json:"detail,omitempty"`
}

// Receipt is one identity bound to the lease: what ran it and how it
// enforced the lease's bounds. Public identifiers only.
type Receipt struct {
	Kind   string `json:"kind"` // "provider" or "supervisor"
	Name   string `json:"name"` // bwrap, worktree, crabbox, headless, herdr …
	ID     string `json:"id"`
	Detail string `json:"detail,omitempty"`
}

// AgentRun records the agent's run.
type AgentRun struct {
	sandbox.Exit
	StartedAt   time.Time `json:"started_at"`
	EndedAt     time.Time `json:"ended_at"`
	OutputBytes int64     `json:"output_bytes"`
	// RunnerGone is set when the process running the agent vanished while
	// the agent worked, and reconcile collected what the agent left: its
	// output so far and its partial result.
	RunnerGone bool `json:"runner_gone,omitempty"`
}

// ResultStatus says what a result is.
type ResultStatus string

const (
	ResultOK          ResultStatus = "ok"          // under review
	ResultFailed      ResultStatus = "failed"      // the changes of an agent that failed
	ResultQuarantined ResultStatus = "quarantined" // it did not verify
)

// Result is the host-computed result of a lease.
type Result struct {
	Status      ResultStatus        `json:"status"`
	Summary     string              `json:"summary"`
	Base        string              `json:"base"`
	Commit      string              `json:"commit"`
	Tree        string              `json:"tree"`
	Manifest    []verify.FileChange `json:"manifest"`
	PatchDigest string              `json:"patch_digest"`
	// Checks ran in a fresh sandbox seeded from the result commit.
	Checks []CheckResult `json:"checks"`
	// Artifacts are the declared workspace files kept in the log.
	Artifacts []Artifact `json:"artifacts"`
}

// CheckResult is one declared check's outcome.
type CheckResult struct {
	Command  string `json:"command"`
	ExitCode int    `json:"exit_code"`
	Passed   bool   `json:"passed"`
	// Skipped says why the check could not run (no sandbox available).
	Skipped    string `json:"skipped,omitempty"`
	Bound      string `json:"bound,omitempty"`
	DurationMS int64  `json:"duration_ms"`
	Log        string `json:"log"` // path in the lease log
	LogBytes   int64  `json:"log_bytes"`
}

// Artifact is a declared output file copied out of the sandbox.
type Artifact struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256,omitempty"`
	Stored string `json:"stored,omitempty"` // path in the lease log
	// Missing says why the file was not kept (absent, too large, not a file).
	Missing string `json:"missing,omitempty"`
}

// Files in the log tree.
const (
	recordFile   = "lease.json"
	manifestFile = "result/manifest.json"
	patchFile    = "result/patch.diff"
	resultFile   = "result/result.json"
	deltaFile    = "result/delta.txt"
	findingsFile = "findings.json"
	outputFile   = "output/agent.log"
)

// resultVersion is the version of result/result.json.
const resultVersion = 1

// marshalResult is result/result.json: the typed result with its version.
func (r *Result) marshal() []byte {
	b, _ := json.MarshalIndent(struct {
		Version int `json:"version"`
		*Result
	}{resultVersion, r}, "", "  ")
	return append(b, '\n')
}

func (l *Lease) marshal() []byte {
	b, _ := json.MarshalIndent(l, "", "  ")
	return append(b, '\n')
}

// maxRecord bounds lease.json so a hostile log cannot exhaust memory.
const maxRecord = 64 << 20

func parseLease(b []byte) (*Lease, error) {
	var l Lease
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&l); err != nil {
		return nil, fmt.Errorf("lease.json: %w", err)
	}
	// A newer version is read for what this git-lease knows of it, and
	// never written (Execution.ReadOnly).
	if l.Version < 1 {
		return nil, fmt.Errorf("lease.json: version %d (this git-lease reads 1 to %d)", l.Version, RecordVersion)
	}
	if _, err := refs.ParseID(string(l.ID)); err != nil {
		return nil, fmt.Errorf("lease.json: %w", err)
	}
	for _, id := range append([]refs.ID{l.Parent}, l.Children...) {
		if _, err := refs.ParseID(string(id)); err != nil && id != "" {
			return nil, fmt.Errorf("lease.json: a parent or child: %w", err)
		}
	}
	return &l, nil
}

// holdsResult reports whether the lease's review branch is at its result
// commit: it reached review (a quarantined result never does, even once
// part of it was applied with apply --only).
func (l *Lease) holdsResult() bool {
	switch l.State {
	case Review, Applied, Rejected:
		return l.Result == nil || l.Result.Status != ResultQuarantined
	}
	return false
}
