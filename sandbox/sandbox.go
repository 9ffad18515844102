// Package sandbox runs an agent command in a disposable workspace and tells
// the host where the agent's changes are. Providers know nothing of refs: the
// host collects, verifies and records the delta itself.
package sandbox

import (
	"context"
	"errors"
	"io"
	"net"
	"time"
)

// Proxy serves a lease's network proxy on a listener until the proxy is
// closed (netproxy.Proxy does).
type Proxy interface {
	Serve(l net.Listener) error
}

// Spec is everything a provider needs to set up one lease's workspace. All
// paths are host paths chosen and validated by the caller.
type Spec struct {
	// ID is the execution ID (12 lowercase hex).
	ID string
	// Dir is the provider's private runtime directory for this lease.
	Dir string
	// Worktree is the lease's review worktree. Only the worktree provider
	// lets the agent write there.
	Worktree string
	// BaseTree is the hash of the base tree; providers that share a base
	// between leases key their copy by it.
	BaseTree string
	// ExportBase writes the base tree's files into an empty directory.
	ExportBase func(dir string) error
	// ExportLayer, when set, writes into an empty directory what turns an
	// export of tree from into one of the base tree when laid over it:
	// the changed files, with marks for what it hides. It costs what
	// changed. Distance counts the paths that differ between tree from
	// and the base tree, to pick the nearest export to lay it over.
	ExportLayer func(from, dir string, marks LayerMarks) error
	Distance    func(from string) (int, error)
	// BasesDir holds exported bases shared by leases (one directory per tree).
	BasesDir string
	// Caches names the build and package caches the agent gets, read-only
	// layers in CachesDir that only a trusted warm-up writes. Providers
	// without caches ignore them.
	Caches    []string
	CachesDir string
	// Limits bounds the agent.
	Limits Limits
	// ReadOnly lists extra host paths the agent may read (never write).
	ReadOnly []string
	// ReadOnlyWork makes the agent's /work its base, read-only: an agent
	// that only reads (a reviewer, a test runner) and changes nothing
	// there. Its /tmp and home stay writable.
	ReadOnlyWork bool
	// PATH lists directories of ReadOnly that the agent's PATH adds after
	// the system's (an interpreter installed in the user's home).
	PATH []string
	// Proxy, when set, is the lease's network proxy: the provider makes it
	// the agent's only way out, through a forwarder on the sandbox's
	// loopback that the agent's proxy variables name, and has it serve the
	// listener that forwarder reaches, a socket the sandbox itself made (a
	// host socket bound in would show its host path in the sandbox's mount
	// table). Nil means no network at all.
	Proxy Proxy
	// Binds are single host files the lease shares with its agent (the
	// prompt, the agent's state file, its credential files) at fixed places
	// inside the sandbox.
	Binds []Bind
	// SeccompAllow names the entries of a provider's default seccomp
	// filter that trusted policy lets through (bwrap's are listed in
	// sandbox/bwrap/seccomp.go); nil lets none through. Providers without
	// such a filter ignore it.
	SeccompAllow []string
	// RequireEscapeRecording makes a provider that cannot record its
	// agent's escape attempts (see EscapeRecorder) refuse to start
	// (ErrUnavailable) instead of running unrecorded.
	RequireEscapeRecording bool
	// RecordOpens makes a provider that records escape attempts record
	// the opens that would write outside the agent's places too, at a cost
	// to every open that asks to write.
	RecordOpens bool
}

// LayerMarks makes the entries of a layer that hide what the layers below
// hold at a path: a whiteout for a path that is gone, an opaque directory
// for one whose content below must not show.
type LayerMarks interface {
	Whiteout(path string) error
	Opaque(path string) error
}

// Bind puts one host file at Sandbox, inside the sandbox. Providers without
// a sandbox give the agent the host path instead (see BindPath). A provider
// may give the agent a copy of a read-only file, and keep a writable one in
// the sandbox (see SharedFiles).
type Bind struct {
	Host     string
	Sandbox  string
	Writable bool
}

// Limits are the resource bounds of one agent run. Zero means no bound.
type Limits struct {
	Wall        time.Duration
	MemoryBytes int64
	CPU         time.Duration
	Processes   int
	DiskBytes   int64
	OutputBytes int64
	// RequireCgroup makes a provider that would bind memory, processes and
	// CPU with per-process rlimits only refuse to start (ErrUnavailable).
	RequireCgroup bool
}

// Command is the agent command to run.
type Command struct {
	Argv []string
	// Dir is where the agent starts: a directory of the base tree,
	// relative to its top and slash-separated ("" for the top). Start
	// checks that it is a plain path to a directory of the base.
	Dir string
	// Env is the agent's environment. Sandboxed providers give the agent
	// nothing else; the worktree provider adds it to the user's own.
	Env []string
	// TTY runs the agent on a pseudo-terminal (its own, never the user's).
	TTY    bool
	Output io.Writer // standard output and error, merged
}

// ProviderName names a provider in policy (provider = "…") and in a
// lease's record.
type ProviderName string

// The providers git-lease has.
const (
	Bwrap    ProviderName = "bwrap"    // bubblewrap and overlayfs, the default
	AgentFS  ProviderName = "agentfs"  // bwrap's sandbox over an AgentFS database
	Crabbox  ProviderName = "crabbox"  // a box from Crabbox
	Worktree ProviderName = "worktree" // trusted_local: a git worktree, no sandbox
)

// Exit says how an agent run ended.
type Exit struct {
	Code   int    `json:"code"`
	Signal string `json:"signal,omitempty"`
	// Bound names the bound that stopped the agent: wall, memory, cpu,
	// processes, disk or output.
	Bound  string `json:"bound,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// Provider makes and runs sandboxes. Every method is keyed by the spec's ID
// and is safe to call again after a crash: Create and Discard are
// idempotent.
type Provider interface {
	// Name is the provider's name as policy and the lease's record say it.
	Name() ProviderName
	// Sandboxed reports whether the provider is a security boundary.
	Sandboxed() bool
	// Check reports, cheaply and before anything is created, whether the
	// provider can run here; its error wraps ErrUnavailable and says how
	// to fix what is missing.
	Check() error
	// Create prepares the workspace for spec.
	Create(ctx context.Context, spec Spec) error
	// Launch sets up the sandbox around cmd and holds the command at a
	// gate: nothing of cmd runs until Release. A sandbox that cannot be set
	// up fails here, with ErrUnavailable, before anything runs.
	Launch(ctx context.Context, spec Spec, cmd Command) (Process, error)
	// Delta tells the collector where the agent's changes are, first
	// making them readable on the host when they are kept in a file
	// system of their own (mounted for the calling process until Discard
	// or its exit). Changes that are gone are a Delta whose Root does not
	// exist, not an error; an error says they are there but cannot be
	// read.
	Delta(spec Spec) (Delta, error)
	// Discard removes the workspace. Removing what is already gone succeeds.
	Discard(ctx context.Context, spec Spec) error
}

// Collector is a Provider whose agent's changes stay where the agent ran (a
// remote box) until they are copied to the host. The lease calls Collect
// after the agent has ended and before Delta, and again when reconcile
// resumes an interrupted collection: collecting again replaces the earlier
// copy. Until Collect succeeds, Delta points at nothing.
type Collector interface {
	Collect(ctx context.Context, spec Spec) error
}

// Identifier is a Provider whose sandboxes have an identity of their own,
// assigned by Create (a Crabbox box ID). The lease binds it in its log
// before the agent is released, so cleanup and reconcile can be checked
// against it. Identity only reads: it fails when Create has not assigned
// one. The identity is a public identifier, never a local path.
type Identifier interface {
	Identity(spec Spec) (string, error)
}

// Process is a launched, gated agent.
type Process interface {
	// Input is the agent's standard input (a pipe, or its terminal). Close
	// it to send end-of-file.
	Input() io.WriteCloser
	// Release lets the agent command start.
	Release() error
	// Interrupt asks the agent to stop (SIGINT), as Ctrl-C would.
	Interrupt() error
	// Wait waits for the agent and its whole sandbox to end.
	Wait() (Exit, error)
	// Kill stops the whole sandbox now.
	Kill()
	// Enforcement says how the bounds are enforced (for example "cgroup v2",
	// "rlimits"), for the lease record.
	Enforcement() string
}

// SharedFiles is implemented by a Process that keeps the lease's writable
// Binds inside its sandbox rather than at their host paths, so that no host
// path shows in the sandbox (its mount table names a bind's source). The
// host reads them here instead: ReadShared returns at most max bytes of the
// regular file bound at sandboxPath, nil for anything else, also after the
// agent has ended.
type SharedFiles interface {
	ReadShared(sandboxPath string, max int) []byte
}

// Holders is implemented by a Process whose sandbox lives in host
// processes that outlast no one: Holders are the PIDs whose end is the end
// of every process of the sandbox (for bwrap: bwrap itself, and the first
// process of the sandbox's PID namespace, whose end makes the kernel kill
// the rest of the namespace). The lease records them with their start
// times, so that cleanup and reconcile can confirm the sandbox is gone.
type Holders interface {
	Holders() []int
}

// Bypass counts what a sandbox's own network stack refused to send: each a
// connection or datagram that tried to leave the sandbox without the proxy.
type Bypass struct {
	// NoRoute counts TCP connections and UDP datagrams to addresses outside
	// the sandbox (the sandbox has no route): direct connections, and DNS
	// queries to a resolver outside it.
	NoRoute int64 `json:"no_route"`
	// ClosedUDP counts UDP datagrams to a closed port on the sandbox's own
	// loopback: DNS queries to a local resolver (127.0.0.53, or 127.0.0.1
	// when there is no resolver configuration) land here.
	ClosedUDP int64 `json:"closed_udp"`
}

// BypassCounter is implemented by a Process whose sandbox can count what
// its network stack refused. Bypass is complete once Wait has returned.
type BypassCounter interface {
	Bypass() Bypass
}

// ErrUnavailable is returned when a provider cannot be provisioned on this
// machine. Its message says what is missing and how to fix it.
var ErrUnavailable = errors.New("sandbox unavailable")

// EscapeAttempt is one distinct thing an agent tried that its sandbox
// refuses, as the sandbox's kernel saw it, and how often.
type EscapeAttempt struct {
	// Rule is what refused or saw it: a seccomp entry ("namespaces",
	// "mount", ...), or a watch of the sandbox's own.
	Rule string
	// Syscall is the call, and Call the call with its decisive arguments
	// as the agent made it ("unshare(CLONE_NEWUSER)") or the path it named.
	Syscall, Call string
	Count         int
	First, Last   time.Time
}

// Escapes is what a sandbox recorded of its agent's escape attempts.
type Escapes struct {
	// Recording says how the attempts were recorded; empty when they were
	// not, and Unavailable then says why.
	Recording, Unavailable string
	// OpensUnrecorded says why writes outside that begin with an open
	// went unrecorded, when they did (wholly, or some of them).
	OpensUnrecorded string
	Attempts        []EscapeAttempt
	// Omitted counts distinct attempts beyond those listed.
	Omitted int
}

// EscapeRecorder is implemented by a Process whose sandbox records its
// agent's escape attempts. Escapes is complete once Wait has returned.
type EscapeRecorder interface {
	Escapes() Escapes
}

// Keeper is a Provider that keeps a file of a discarded sandbox for the
// record (the agentfs provider's database). Kept names it on the host
// after Discard, or is "" when there is none.
type Keeper interface {
	Kept(spec Spec) string
}
