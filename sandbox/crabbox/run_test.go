package crabbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lease/git-lease/sandbox"
)

// Crabbox's errorKind timeout is the wall bound, not an exit code.
func TestRunTimeoutIsWallBound(t *testing.T) {
	w := newWorld(t, map[string]string{"a.txt": "a\n"})
	p, spec := w.provider(), w.spec("0123456789ab")
	if err := p.Create(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
	t.Setenv("STANDIN_CRABBOX_RUN_TIMEOUT", "200ms")
	exit, err := runAgent(t, p, spec, sandbox.Command{Argv: []string{"sleep", "5"}})
	if err != nil || exit.Bound != sandbox.BoundWall {
		t.Fatalf("Wait = %+v, %v; want the wall bound", exit, err)
	}
}

// A box that vanishes fails the run, and Create never replaces it;
// Discard still confirms it gone.
func TestVanishedBox(t *testing.T) {
	w := newWorld(t, map[string]string{"a.txt": "a\n"})
	p, spec := w.provider(), w.spec("0123456789ab")
	if err := p.Create(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
	t.Setenv("STANDIN_CRABBOX_VANISH", "run")
	_, err := runAgent(t, p, spec, sandbox.Command{Argv: []string{"true"}})
	if err == nil || !strings.Contains(err.Error(), "without its timing report") || !strings.Contains(err.Error(), "lease not found") {
		t.Fatalf("Wait = %v", err)
	}
	t.Setenv("STANDIN_CRABBOX_VANISH", "")
	if err := p.Create(t.Context(), spec); err == nil || !strings.Contains(err.Error(), "is gone") {
		t.Fatalf("Create after the box vanished = %v", err)
	}
	if n := len(w.calls("warmup")); n != 1 {
		t.Errorf("%d warmups: a second box was leased", n)
	}
	if err := p.Discard(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
}

// Launch needs a box, and an environment Crabbox can carry.
func TestLaunchRefusals(t *testing.T) {
	w := newWorld(t, map[string]string{"a.txt": "a\n"})
	p, spec := w.provider(), w.spec("0123456789ab")
	if _, err := p.Launch(t.Context(), spec, sandbox.Command{Argv: []string{"true"}}); !errors.Is(err, ErrNoBox) {
		t.Fatalf("Launch before Create = %v", err)
	}
	if err := p.Create(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
	for _, env := range []string{"Q=it's", "S=$(id)", "CRABBOX_LEASE_ID=x", "1X=y"} {
		if _, err := p.Launch(t.Context(), spec, sandbox.Command{Argv: []string{"true"}, Env: []string{env}}); err == nil {
			t.Errorf("Launch with %s succeeded", env)
		}
	}
	if err := p.Discard(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
}

// Discard counts stop's "not found" as done once the box is confirmed
// gone, and refuses to forget a box that is still there.
func TestDiscardConfirms(t *testing.T) {
	w := newWorld(t, map[string]string{"a.txt": "a\n"})
	p, spec := w.provider(), w.spec("0123456789ab")
	if err := p.Create(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
	t.Setenv("STANDIN_CRABBOX_STOP", "leave")
	err := p.Discard(t.Context(), spec)
	if err == nil || !strings.Contains(err.Error(), "not confirmed gone") || !strings.Contains(err.Error(), `state "ready"`) ||
		!strings.Contains(err.Error(), "crabbox list") || !strings.Contains(err.Error(), "local claim") {
		t.Fatalf("Discard of a box stop left = %v", err)
	}
	if _, err := os.Stat(layout(spec).box); err != nil {
		t.Fatalf("an unconfirmed Discard lost the box record: %v", err)
	}
	t.Setenv("STANDIN_CRABBOX_STOP", "notfound")
	if err := p.Discard(t.Context(), spec); err != nil {
		t.Fatalf("Discard with stop answering 4 = %v", err)
	}
	if boxes := w.boxes(); len(boxes) != 0 {
		t.Errorf("boxes left: %v", boxes)
	}
}

// A box leased but not recorded (crabbox interrupted before git-lease wrote
// box.json) is found through the lease's own claims: Create adopts it
// instead of leasing another, and Discard stops it.
func TestUnrecordedBoxIsAdopted(t *testing.T) {
	w := newWorld(t, map[string]string{"a.txt": "a\n"})
	p, spec := w.provider(), w.spec("0123456789ab")
	if err := p.Create(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(layout(spec).box); err != nil {
		t.Fatal(err)
	}
	if err := p.Create(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
	if n := len(w.calls("warmup")); n != 1 {
		t.Errorf("%d warmups: a second box was leased", n)
	}
	if id, err := p.Identity(spec); id != "cbx_0123456789ab" {
		t.Fatalf("Identity = %q, %v", id, err)
	}
	os.Remove(layout(spec).box)
	if err := p.Discard(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
	if boxes := w.boxes(); len(boxes) != 0 {
		t.Errorf("boxes left: %v", boxes)
	}
}

// Crabbox acts on CRABBOX_* variables over its config file; one mounts the
// host's Docker socket into a local container. None from the developer's
// environment reaches crabbox unless trusted policy names it.
func TestHostCrabboxVariablesDoNotReachCrabbox(t *testing.T) {
	w := newWorld(t, map[string]string{"a.txt": "a\n"})
	p, spec := w.provider(), w.spec("0123456789ab")
	if err := p.Create(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CRABBOX_LOCAL_CONTAINER_DOCKER_SOCKET", "1")
	t.Setenv("CRABBOX_CONFIG", "/nonexistent/host.yaml")
	docker := func(p Provider) string {
		var out strings.Builder
		exit, err := runAgent(t, p, spec, sandbox.Command{Argv: []string{"sh", "-c", `echo "docker=${DOCKER_HOST:-none}"`}, Output: &out})
		if err != nil || exit.Code != 0 {
			t.Fatalf("run = %+v, %v\n%s", exit, err, out.String())
		}
		return out.String()
	}
	if got := docker(p); !strings.Contains(got, "docker=none") {
		t.Errorf("a CRABBOX_* variable of the host reached crabbox: %q", got)
	}
	p.PassEnv = []string{"CRABBOX_LOCAL_CONTAINER_DOCKER_SOCKET", "CRABBOX_CONFIG"}
	if got := docker(p); !strings.Contains(got, "docker=unix:///var/run/docker.sock") {
		t.Errorf("a variable trusted policy names did not reach crabbox: %q", got)
	}
	for _, inv := range w.calls("run") {
		if inv.Config != layout(spec).config {
			t.Errorf("crabbox ran with CRABBOX_CONFIG=%s, not the lease's own", inv.Config)
		}
	}
	if err := p.Discard(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
}

// Crabbox runs the remote command with ssh -n, so its standard input is
// empty: the prompt goes to the box as a file, uploaded at Release (after
// the runner has recorded the lease's identities), fed to the agent's
// standard input and named by $LEASE_PROMPT_FILE.
func TestPromptReachesTheBox(t *testing.T) {
	w := newWorld(t, map[string]string{"a.txt": "a\n"})
	p, spec := w.provider(), w.spec("0123456789ab")
	prompt := filepath.Join(t.TempDir(), "prompt")
	if err := os.WriteFile(prompt, []byte("fix the bug\nplease\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	spec.Binds = []sandbox.Bind{
		{Host: filepath.Join(t.TempDir(), "state"), Sandbox: "/run/lease/state", Writable: true},
		{Host: prompt, Sandbox: "/run/lease/prompt"},
	}
	if err := p.Create(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	proc, err := p.Launch(t.Context(), spec, sandbox.Command{
		Argv:   []string{"sh", "-c", `read a; read b; echo "stdin=$a/$b"; echo "file=$(tr '\n' / < "$LEASE_PROMPT_FILE")"; echo "state=${LEASE_STATE_FILE:-none}"`},
		Env:    []string{"LEASE_PROMPT_FILE=/run/lease/prompt", "LEASE_STATE_FILE=/run/lease/state"},
		Output: &out,
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(w.calls("cp")); n != 0 {
		t.Fatalf("the prompt was uploaded before Release (%d cp calls)", n)
	}
	if err := proc.Release(); err != nil {
		t.Fatal(err)
	}
	// What the runner does: write the prompt on standard input, and close it.
	big := strings.Repeat("x", 1<<20)
	if _, err := proc.Input().Write([]byte(big)); err != nil {
		t.Fatal(err)
	}
	proc.Input().Close()
	exit, err := proc.Wait()
	if err != nil || exit.Code != 0 {
		t.Fatalf("Wait = %+v, %v\n%s", exit, err, out.String())
	}
	for _, want := range []string{"stdin=fix the bug/please", "file=fix the bug/please/", "state=none"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the agent's output lacks %q:\n%s", want, out.String())
		}
	}
	cps := w.calls("cp")
	if len(cps) != 1 || cps[0].Argv[len(cps[0].Argv)-1] != "SANDBOX:/tmp" {
		t.Errorf("cp calls = %+v, want one upload of the base and the prompt", cps)
	}
	if err := p.Collect(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
	if err := sandbox.Walk(deltaOf(p, spec), func(e sandbox.Entry) error {
		if e.Path != "a.txt" {
			t.Errorf("the result holds %s", e.Path)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := p.Discard(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
}
