package gitlease

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/gitlease/policy"
	"github.com/git-lease/git-lease/refs"
)

// GateOptions are the inputs of git lease gate.
type GateOptions struct {
	// Provider and Supervisor name what to prove; "" means what a start
	// would use (trusted policy's provider, lease.supervisor).
	Provider, Supervisor string
	Version              string // git-lease's
	Progress             io.Writer
}

// RunGate runs the feasibility gate for the setup a start would use and
// keeps its record, passed or not: in this user's store (which gates
// starts) and, signed, on the repository's gate ref. The gate works only in
// a fixture repository it makes in a temporary directory and removes; the
// user's repository gets nothing but the record.
func RunGate(ctx context.Context, repo *refs.Repo, opts GateOptions) (*GateRecord, error) {
	eff, err := policy.Load(repo, headOrZero(repo))
	if err != nil {
		return nil, err
	}
	provider := opts.Provider
	if provider == "" {
		provider = eff.Provider
	}
	if provider != eff.Provider {
		return nil, fmt.Errorf("--provider %s: trusted policy gives provider %s (%s), and the gate proves what starts use", provider, eff.Provider, eff.Sources["provider"])
	}
	sup, err := supervisorFor(repo, opts.Supervisor, "")
	if err != nil {
		return nil, err
	}
	if err := sup.Check(ctx); err != nil {
		return nil, err
	}
	want, err := currentSetup(ctx, provider, sup, opts.Version)
	if err != nil {
		return nil, err
	}
	unlock, err := lockGateStore(want.Provider, want.Supervisor)
	if err != nil {
		return nil, err
	}
	defer unlock()
	r, err := runGate(ctx, repo, want, opts.Progress)
	if err != nil {
		return nil, err
	}
	return r, recordGate(ctx, repo, encodeGateRecord(r), r)
}

// headOrZero is HEAD, whose .lease.toml narrows the policy as a start's
// would, or zero in a repository without commits.
func headOrZero(repo *refs.Repo) plumbing.Hash {
	c, _ := repo.ResolveCommit("HEAD")
	return c
}

// runGate runs the spike for setup in a fixture repository of its own and
// stores the record in this user's store. Its error is for a gate that
// could not run at all; a gate point that fails is in the record.
func runGate(ctx context.Context, repo *refs.Repo, setup GateSetup, progress io.Writer) (*GateRecord, error) {
	if progress == nil {
		progress = io.Discard
	}
	nonce := make([]byte, 6)
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	s := &spike{nonce: hex.EncodeToString(nonce), setup: setup, progress: progress}
	r := &GateRecord{Version: GateVersion, GateSetup: setup, Session: "gate-" + s.nonce, StartedAt: time.Now().UTC()}
	fmt.Fprintf(progress, "gate: %s %s with %s %s on kernel %s, session %s\n", setup.Provider, setup.ProviderVersion, setup.Supervisor, setup.SupervisorVersion, setup.Kernel, r.Session)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	if err := s.makeFixture(ctx, repo.Config("lease.herdrSession")); err != nil {
		s.remove(ctx)
		return nil, fmt.Errorf("gate: making its fixture repository: %w", err)
	}
	r.Points = s.run(ctx)
	s.remove(ctx)
	r.FinishedAt = time.Now().UTC()
	r.Passed = len(r.Points) == len(gatePoints)
	for _, p := range r.Points {
		r.Passed = r.Passed && p.Passed
	}
	outcome := "passed"
	if !r.Passed {
		outcome = "FAILED"
	}
	fmt.Fprintf(progress, "gate: %s in %s\n", outcome, r.FinishedAt.Sub(r.StartedAt).Round(time.Second/10))
	return r, storeGateRecord(r)
}

// gatePoints are the spec's gate points, in the order the spike proves them.
var gatePoints = []string{"seed", "lifecycle", "events", "results", "isolation", "cleanup"}

// spike is one gate run: a fixture repository and two leases in it, A
// (blocked, reconnected to, canceled) and B (run to review while A runs).
type spike struct {
	nonce    string
	setup    GateSetup
	progress io.Writer
	tmp      string // the fixture's temporary directory
	dir      string // the fixture's checkout
	repo     *refs.Repo
	a, b     *Execution
}

// gitlease runs this git-lease in the fixture and returns its standard
// output; its standard error is in the error.
func (s *spike) gitlease(ctx context.Context, args ...string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Dir = s.dir
	cmd.Env = append(fixtureEnv(), GateFixtureEnv+"="+s.repo.CommonDir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("git lease %s: %v: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// fixtureEnv is this process's environment without what would point git
// at another repository than the fixture.
func fixtureEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_PREFIX", GateFixtureEnv:
			continue
		}
		env = append(env, kv)
	}
	return env
}

func (s *spike) git(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = s.dir
	cmd.Env = append(fixtureEnv(), "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", args[0], err, out)
	}
	return string(out), nil
}

// makeFixture makes the fixture repository: two committed files, then an
// uncommitted edit and an untracked file that must never reach a sandbox.
func (s *spike) makeFixture(ctx context.Context, herdrSession string) error {
	var err error
	if s.tmp, err = os.MkdirTemp("", "git-lease-gate-"); err != nil {
		return err
	}
	s.dir = filepath.Join(s.tmp, "repo")
	if err := os.Mkdir(s.dir, 0o755); err != nil {
		return err
	}
	files := map[string]string{"seed.txt": "committed " + s.nonce + "\n", "src/main.sh": "echo gate\n"}
	for name, content := range files {
		if err := os.MkdirAll(filepath.Join(s.dir, filepath.Dir(name)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(s.dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	steps := [][]string{
		{"init", "-q"},
		{"config", "user.name", "git-lease gate"},
		{"config", "user.email", "gate@git-lease.invalid"},
		{"add", "-A"},
		{"commit", "-q", "--no-verify", "-m", "gate fixture " + s.nonce},
	}
	if herdrSession != "" {
		steps = append(steps, []string{"config", "lease.herdrSession", herdrSession})
	}
	for _, args := range steps {
		if _, err := s.git(ctx, args...); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(s.dir, "seed.txt"), []byte("uncommitted host edit\n"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(s.dir, "host-only.txt"), []byte("untracked\n"), 0o644); err != nil {
		return err
	}
	s.repo, err = refs.Open(s.dir)
	return err
}

// remove cancels what still runs, cleans up every fixture lease and
// removes the fixture.
func (s *spike) remove(ctx context.Context) {
	if s.repo != nil {
		for _, x := range []*Execution{s.a, s.b} {
			if x != nil {
				if y, err := Load(s.repo, x.Lease.ID); err == nil && !y.Lease.State.Settled() {
					s.gitlease(ctx, "cancel", "--grace", "1s", string(x.Lease.ID))
				}
			}
		}
		s.gitlease(ctx, "cleanup", "--all")
	}
	if s.tmp != "" {
		if err := os.RemoveAll(s.tmp); err != nil {
			fmt.Fprintf(s.progress, "gate: could not remove its fixture %s: %v\n", s.tmp, err)
		}
	}
}

// run proves the gate points in order, stopping at the first that fails.
func (s *spike) run(ctx context.Context) []GatePoint {
	steps := []func(context.Context) (string, error){s.seed, s.lifecycle, s.events, s.results, s.isolation, s.cleanup}
	var points []GatePoint
	for i, step := range steps {
		began := time.Now()
		evidence, err := step(ctx)
		p := GatePoint{Name: gatePoints[i], Passed: err == nil, Evidence: evidence}
		if err != nil {
			p.Evidence = err.Error()
		}
		points = append(points, p)
		mark := "ok  "
		if !p.Passed {
			mark = "FAIL"
		}
		fmt.Fprintf(s.progress, "gate: %s %-9s (%.1fs) %s\n", mark, p.Name, time.Since(began).Seconds(), p.Evidence)
		if !p.Passed {
			break
		}
	}
	return points
}

// The agents' scripts. Each carries its lease's marker (gate-agent-a-N,
// gate-agent-b-N) on its command line; B builds A's marker from two halves
// so that its own command line does not hold it.
const agentA = `read n; read host
: gate-agent-a-%[1]s
echo "prompt:$n"
find . -type f -print | LC_ALL=C sort | sed 's/^/file:/'
echo "seed:$(cat seed.txt)"
if [ -e "$host" ]; then echo "host:visible"; else echo "host:hidden"; fi
echo mark > gate-agent-a-%[1]s.txt
echo "blocked: may the gate go on?" > "$LEASE_STATE_FILE"
trap 'echo interrupted; exit 3' INT
while :; do sleep 0.1; done
`

const agentB = `read n; read host
: gate-agent-b-%[1]s
a=gate-agent; a="$a-a-%[1]s"
echo mark > gate-agent-b-%[1]s.txt
find / -path /proc -prune -o -name "gate-agent-b-%[1]s.txt" -print 2>/dev/null | grep -q . && echo "found:own-file"
find / -path /proc -prune -o -name "$a.txt" -print 2>/dev/null | grep -q . && echo "sees:a-file"
for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < "$f" 2>/dev/null | grep -qF "gate-agent-b-%[1]s" && echo "found:own-process"; done
for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < "$f" 2>/dev/null | grep -qF "$a" && echo "sees:a-process"; done
[ -e "$host" ] && echo "sees:host-checkout"
[ -n "$SSH_AUTH_SOCK" ] && echo "sees:ssh-agent"
rm gate-agent-b-%[1]s.txt
echo "result-$n" > out.txt
`

func (s *spike) prompt() string { return s.nonce + "\n" + s.dir + "\n" }

func (s *spike) startDetached(ctx context.Context, script string, extra ...string) (*Execution, error) {
	args := append([]string{"start", "-q", "--detach", "--supervisor", s.setup.Supervisor, "--mission", "gate-" + s.nonce, "--prompt", s.prompt()}, extra...)
	out, err := s.gitlease(ctx, append(args, "--", "sh", "-c", fmt.Sprintf(script, s.nonce))...)
	if err != nil {
		return nil, err
	}
	id, err := refs.ParseID(strings.TrimSpace(out))
	if err != nil {
		return nil, fmt.Errorf("start printed %q: %w", out, err)
	}
	return Load(s.repo, id)
}

// until reloads x until cond holds, for at most two minutes.
func (s *spike) until(ctx context.Context, x *Execution, what string, cond func(*Execution) bool) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		y, err := Load(s.repo, x.Lease.ID)
		if err != nil {
			return err
		}
		*x = *y
		if cond(x) {
			return nil
		}
		if time.Now().After(deadline) || x.Lease.State.Settled() {
			return fmt.Errorf("lease %s is %s (%s), waiting for %s", x.Lease.ID, x.Lease.State, x.Lease.Reason, what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// logOf lists a lease's log entries' events and the states it moved to.
func (s *spike) logOf(x *Execution) []string {
	tip, err := s.repo.LogTip(x.Lease.ID)
	if err != nil {
		return nil
	}
	log, _ := s.repo.Log(tip)
	var out []string
	for _, e := range log {
		subject, _, _ := strings.Cut(e.Message, "\n")
		if i := strings.LastIndex(subject, "-> "); i >= 0 {
			out = append(out, subject[i+3:])
		} else if i := strings.LastIndex(subject, ": "); i >= 0 {
			out = append(out, "event:"+subject[i+2:])
		}
	}
	return out
}

func (s *spike) logs(ctx context.Context, x *Execution) (string, error) {
	return s.gitlease(ctx, "logs", "--raw", string(x.Lease.ID))
}

// seed: lease A starts, blocks, and its output says what it saw: exactly
// the committed tree, neither the edit nor the untracked file, and no path
// of the host checkout.
func (s *spike) seed(ctx context.Context) (string, error) {
	var err error
	if s.a, err = s.startDetached(ctx, agentA); err != nil {
		return "", err
	}
	if err := s.until(ctx, s.a, "its agent to say it is blocked", func(x *Execution) bool {
		return x.Lease.Activity != nil && x.Lease.Activity.State == "blocked"
	}); err != nil {
		return "", err
	}
	out, err := s.logs(ctx, s.a)
	if err != nil {
		return "", err
	}
	tracked, err := s.git(ctx, "ls-tree", "-r", "--name-only", s.a.Lease.Base)
	if err != nil {
		return "", err
	}
	var want, seen []string
	for _, f := range strings.Fields(tracked) {
		want = append(want, "./"+f)
	}
	for _, line := range strings.Split(out, "\n") {
		if f, ok := strings.CutPrefix(line, "file:"); ok {
			seen = append(seen, f)
		}
	}
	switch {
	case !slices.Equal(seen, want):
		return "", fmt.Errorf("the sandbox held %v, the base %s has %v", seen, s.a.Lease.Base[:12], want)
	case !strings.Contains(out, "seed:committed "+s.nonce+"\n"):
		return "", fmt.Errorf("seed.txt in the sandbox is not the committed one:\n%s", out)
	case !strings.Contains(out, "host:hidden\n"):
		return "", fmt.Errorf("the agent sees the host checkout %s", s.dir)
	}
	return fmt.Sprintf("lease A saw exactly the %d files of base %s (not the checkout's edit or untracked file); the checkout's path does not exist in its sandbox", len(seen), s.a.Lease.Base[:12]), nil
}

// lifecycle: A runs under the supervisor, whose endpoint is recorded and
// alive, and the agent's states reached the log through it.
func (s *spike) lifecycle(ctx context.Context) (string, error) {
	e := s.a.Lease.Supervisor
	if e == nil || e.Supervisor != s.setup.Supervisor {
		return "", fmt.Errorf("lease A has endpoint %+v, want one of %s", e, s.setup.Supervisor)
	}
	sup, err := s.a.supervisorOf()
	if err != nil {
		return "", err
	}
	if alive, err := sup.Alive(ctx, *e); !alive {
		return "", fmt.Errorf("the %s endpoint of running lease A is not alive: %v", e.Supervisor, err)
	}
	events := s.logOf(s.a)
	for _, want := range []string{"event:supervisor-bound", "running", "event:working", "event:blocked"} {
		if !slices.Contains(events, want) {
			return "", fmt.Errorf("lease A's log lacks %s: %v", want, events)
		}
	}
	where := "runner " + e.Label
	if e.PaneID != "" {
		where = "pane " + e.PaneID + " (" + e.Label + ")"
	}
	if e.Label == "" {
		where = "its runner"
	}
	return fmt.Sprintf("lease A runs under %s %s in %s, alive, and reported working then blocked", s.setup.Supervisor, s.setup.SupervisorVersion, where), nil
}

// events: a new process reconnects to A (wait), which is then canceled;
// the prompt reached it; B (in results) completes.
func (s *spike) events(ctx context.Context) (string, error) {
	out, err := s.logs(ctx, s.a)
	if err != nil {
		return "", err
	}
	if !strings.Contains(out, "prompt:"+s.nonce+"\n") {
		return "", fmt.Errorf("lease A's agent did not get its prompt:\n%s", out)
	}
	if _, err := s.gitlease(ctx, "wait", "--timeout", "1s", string(s.a.Lease.ID)); err == nil {
		return "", errors.New("wait on blocked lease A returned as if it had finished")
	}
	if err := s.until(ctx, s.a, "the runner to record the reconnection", func(x *Execution) bool {
		return slices.Contains(s.logOf(x), "event:reconnected")
	}); err != nil {
		return "", err
	}
	if s.b, err = s.startDetached(ctx, agentB, "--check", "grep -qx result-"+s.nonce+" out.txt"); err != nil {
		return "", err
	}
	if _, err := s.gitlease(ctx, "wait", "--timeout", "5m", string(s.b.Lease.ID)); err != nil {
		return "", err
	}
	if _, err := s.gitlease(ctx, "cancel", "--grace", "20s", string(s.a.Lease.ID)); err != nil && !strings.Contains(err.Error(), "canceled") {
		return "", err
	}
	if s.a, err = Load(s.repo, s.a.Lease.ID); err != nil {
		return "", err
	}
	if out, err = s.logs(ctx, s.a); err != nil {
		return "", err
	}
	if s.a.Lease.State != Canceled || !strings.Contains(out, "interrupted\n") {
		return "", fmt.Errorf("lease A after cancel: %s, its agent said:\n%s", s.a.Lease.State, out)
	}
	if s.b, err = Load(s.repo, s.b.Lease.ID); err != nil {
		return "", err
	}
	want := []string{"event:prompted", "event:blocked", "event:reconnected", "canceled"}
	a := s.logOf(s.a)
	for _, e := range want {
		if !slices.Contains(a, e) {
			return "", fmt.Errorf("lease A's log lacks %s: %v", e, a)
		}
	}
	if b := s.logOf(s.b); !slices.Contains(b, "event:done") || s.b.Lease.State != Review {
		return "", fmt.Errorf("lease B is %s (%s), log %v", s.b.Lease.State, s.b.Lease.Reason, b)
	}
	return "A: prompted, blocked, reconnected (by a new process), canceled (its agent interrupted); B: done and in review", nil
}

// results: B's patch and check evidence came back through the host's own
// collection, and B's agent found no way to the host.
func (s *spike) results(ctx context.Context) (string, error) {
	r := s.b.Lease.Result
	if r == nil || r.Status != "ok" || len(r.Manifest) != 1 || r.Manifest[0].Path != "out.txt" {
		return "", fmt.Errorf("lease B's result: %+v", r)
	}
	if len(r.Checks) != 1 || !r.Checks[0].Passed || r.Checks[0].Skipped != "" {
		return "", fmt.Errorf("lease B's check: %+v", r.Checks)
	}
	out, err := s.logs(ctx, s.b)
	if err != nil {
		return "", err
	}
	if strings.Contains(out, "sees:host-checkout") || strings.Contains(out, "sees:ssh-agent") {
		return "", fmt.Errorf("lease B's agent reached the host:\n%s", out)
	}
	diff, err := s.git(ctx, "diff", "--name-only", s.b.Lease.Base, "lease/"+string(s.b.Lease.ID))
	if err != nil || strings.TrimSpace(diff) != "out.txt" {
		return "", fmt.Errorf("branch lease/%s differs from its base in %q (%v)", s.b.Lease.ID, diff, err)
	}
	return fmt.Sprintf("lease B: result %s with out.txt only, patch %s, check passed in a fresh sandbox; its agent saw no host checkout or ssh agent", r.Commit[:12], r.PatchDigest), nil
}

// isolation: B, run while A was blocked, found its own file and process
// (so its searches work) but neither A's file nor A's processes.
func (s *spike) isolation(ctx context.Context) (string, error) {
	out, err := s.logs(ctx, s.b)
	if err != nil {
		return "", err
	}
	switch {
	case !strings.Contains(out, "found:own-file") || !strings.Contains(out, "found:own-process"):
		return "", fmt.Errorf("lease B's search found not even its own file and process, so it proves nothing:\n%s", out)
	case strings.Contains(out, "sees:"):
		return "", fmt.Errorf("lease B saw lease A:\n%s", out)
	}
	return "lease B ran while A was blocked: it found its own marker file and process but neither A's file nor A's processes", nil
}

// cleanup: cleanup confirms both leases' runtime resources gone, their
// endpoints dead; a second cleanup changes no ref.
func (s *spike) cleanup(ctx context.Context) (string, error) {
	if _, err := s.gitlease(ctx, "cleanup", "--all"); err != nil {
		return "", err
	}
	before, err := s.git(ctx, "for-each-ref")
	if err != nil {
		return "", err
	}
	for _, x := range []*Execution{s.a, s.b} {
		y, err := Load(s.repo, x.Lease.ID)
		if err != nil {
			return "", err
		}
		if y.Lease.Cleanup == nil || y.Lease.Cleanup.State != CleanupConfirmed {
			return "", fmt.Errorf("lease %s cleanup: %+v", x.Lease.ID, y.Lease.Cleanup)
		}
		sup, err := y.supervisorOf()
		if err != nil {
			return "", err
		}
		if alive, _ := sup.Alive(ctx, *y.Lease.Supervisor); alive {
			return "", fmt.Errorf("lease %s's %s endpoint is alive after cleanup", x.Lease.ID, y.Lease.Supervisor.Supervisor)
		}
		for _, dir := range []string{y.RunDir(), s.repo.LeaseDir("worktrees", string(y.Lease.ID))} {
			if _, err := os.Lstat(dir); err == nil {
				return "", fmt.Errorf("lease %s: %s is still there after cleanup", x.Lease.ID, dir)
			}
		}
	}
	if _, err := s.gitlease(ctx, "cleanup", "--all"); err != nil {
		return "", err
	}
	after, err := s.git(ctx, "for-each-ref")
	if err != nil {
		return "", err
	}
	if after != before {
		return "", errors.New("a second cleanup changed the repository's refs")
	}
	return "both leases' cleanup confirmed (sandbox, worktree, endpoint gone); a second cleanup changed nothing", nil
}
