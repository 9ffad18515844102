package crabbox

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/git-lease/git-lease/sandbox"
)

// Create twice leases one box: the second Create checks the recorded box.
func TestCreateTwiceWarmsOnce(t *testing.T) {
	w := newWorld(t, map[string]string{"a.txt": "a\n"})
	p, spec := w.provider(), w.spec("0123456789ab")
	for range 2 {
		if err := p.Create(t.Context(), spec); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(w.calls("warmup")); n != 1 {
		t.Errorf("%d warmups for one lease", n)
	}
	var waits []invocation
	for _, inv := range w.calls("status") {
		if slices.Contains(inv.Argv, "--wait") {
			waits = append(waits, inv)
		}
	}
	if len(waits) != 1 || argValue(waits[0].Argv, "--id") != "cbx_0123456789ab" {
		t.Errorf("the second Create did not check the recorded box: %+v", waits)
	}
}

// A provider that refuses requested IDs gets a second warmup without one,
// and the ID Crabbox chose is recorded (and found again by Create).
func TestRefusedRequestedIDFallsBack(t *testing.T) {
	w := newWorld(t, map[string]string{"a.txt": "a\n"})
	t.Setenv("STANDIN_CRABBOX_FIXED_ID", "unsupported")
	p, spec := w.provider(), w.spec("0123456789ab")
	for range 2 {
		if err := p.Create(t.Context(), spec); err != nil {
			t.Fatal(err)
		}
	}
	id, err := p.Identity(spec)
	if err != nil || id == "cbx_0123456789ab" || !regexp.MustCompile(`^cbx_[0-9a-f]{12}$`).MatchString(id) {
		t.Fatalf("Identity = %q, %v; want an ID Crabbox chose", id, err)
	}
	warm := w.calls("warmup")
	if len(warm) != 2 || argValue(warm[0].Argv, "--lease-id") == "" || argValue(warm[1].Argv, "--lease-id") != "" {
		t.Fatalf("warmups: %+v", warm)
	}
	data, _ := os.ReadFile(layout(spec).box)
	var b box
	if json.Unmarshal(data, &b) != nil || b.Requested {
		t.Errorf("box.json = %s; want requested false", data)
	}
	if err := p.Discard(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
}

// An ID under which Crabbox holds a live box this lease did not lease is
// never adopted, whatever the intent (the same execution ID in another
// clone); one Crabbox holds as released is a conflict.
func TestLeaseIDConflict(t *testing.T) {
	w := newWorld(t, map[string]string{"a.txt": "a\n"})
	p, first := w.provider(), w.spec("0123456789ab")
	p.TTL = time.Hour
	if err := p.Create(t.Context(), first); err != nil {
		t.Fatal(err)
	}
	longer := p
	longer.TTL = 2 * time.Hour
	for name, q := range map[string]Provider{"the same intent": p, "another intent": longer} {
		other := w.spec("0123456789ab")
		other.Dir = filepath.Join(t.TempDir(), "elsewhere")
		err := q.Create(t.Context(), other)
		if !errors.Is(err, ErrLeaseIDConflict) || !strings.Contains(err.Error(), "did not lease here") {
			t.Fatalf("Create with %s while the box is live = %v", name, err)
		}
		if _, err := q.Identity(other); !errors.Is(err, ErrNoBox) {
			t.Errorf("a conflicting Create with %s recorded a box: %v", name, err)
		}
		if err := q.Discard(t.Context(), other); err != nil {
			t.Fatal(err)
		}
		if boxes := w.boxes(); !slices.Equal(boxes, []string{"cbx_0123456789ab"}) {
			t.Fatalf("discarding the refused lease touched the box it was refused: boxes %v", boxes)
		}
	}
	if n := len(w.calls("warmup")); n != 1 {
		t.Errorf("%d warmups: a held ID was asked for again", n)
	}
	if err := p.Discard(t.Context(), first); err != nil {
		t.Fatal(err)
	}
	released := w.spec("0123456789ab")
	err := p.Create(t.Context(), released)
	if !errors.Is(err, ErrLeaseIDConflict) || !strings.Contains(err.Error(), "lease_id_conflict") {
		t.Fatalf("Create with a released ID = %v", err)
	}
	before := len(w.calls("stop"))
	if err := p.Discard(t.Context(), released); err != nil {
		t.Fatal(err)
	}
	if n := len(w.calls("stop")) - before; n != 0 {
		t.Errorf("discarding a lease whose ID Crabbox refused stopped that ID (%d stops)", n)
	}
}

// A warmup that fails after printing its leased line leaves the box
// recorded, so Discard stops it; one that fails before leaves nothing.
func TestWarmupFailures(t *testing.T) {
	w := newWorld(t, map[string]string{"a.txt": "a\n"})
	p, spec := w.provider(), w.spec("0123456789ab")
	t.Setenv("STANDIN_CRABBOX_WARMUP", "fail-after-lease")
	if err := p.Create(t.Context(), spec); err == nil || !strings.Contains(err.Error(), "exited 5") {
		t.Fatalf("Create = %v", err)
	}
	if id, err := p.Identity(spec); id != "cbx_0123456789ab" {
		t.Fatalf("Identity after a failed warmup = %q, %v", id, err)
	}
	if err := p.Discard(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
	if boxes := w.boxes(); len(boxes) != 0 {
		t.Errorf("boxes left: %v", boxes)
	}

	t.Setenv("STANDIN_CRABBOX_WARMUP", "fail")
	spec = w.spec("ba9876543210")
	if err := p.Create(t.Context(), spec); err == nil || !strings.Contains(err.Error(), "provision failed") {
		t.Fatalf("Create = %v", err)
	}
	if _, err := p.Identity(spec); !errors.Is(err, ErrNoBox) {
		t.Errorf("Identity = %v, want ErrNoBox", err)
	}
	if err := p.Discard(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
}

// What cannot be a sandbox, or cannot be used, fails closed before a box.
func TestFailsClosed(t *testing.T) {
	w := newWorld(t, map[string]string{"a.txt": "a\n"})
	cases := []struct {
		name  string
		knobs map[string]string
		edit  func(*Provider)
		want  string
	}{
		{"static ssh even when listed", nil, func(p *Provider) { p.CrabboxProvider, p.SandboxedProviders = "ssh", []string{"ssh"} }, "static SSH"},
		{"a provider policy does not list", nil, func(p *Provider) { p.CrabboxProvider = "docker" }, "not one that trusted policy counts as sandboxed"},
		{"docker-sandbox, delegated, even when listed", nil, func(p *Provider) {
			p.CrabboxProvider, p.SandboxedProviders = "docker-sandbox", []string{"docker-sandbox"}
		}, "delegated service"},
		{"e2b, delegated, even when listed", nil, func(p *Provider) { p.CrabboxProvider, p.SandboxedProviders = "e2b", []string{"e2b"} }, "delegated service"},
		{"an alias or unknown name, even when listed", nil, func(p *Provider) { p.CrabboxProvider, p.SandboxedProviders = "docker", []string{"docker"} }, "not one git-lease knows"},
		{"external, no isolation of its own, even when listed", nil, func(p *Provider) { p.CrabboxProvider, p.SandboxedProviders = "external", []string{"external"} }, "no isolation of its own"},
		{"no crabbox", nil, func(p *Provider) { p.Bin = filepath.Join(t.TempDir(), "crabbox") }, "not installed"},
		{"too old", map[string]string{"VERSION": "0.43.9"}, nil, "too old"},
		{"a development build", map[string]string{"VERSION": "dev"}, nil, "cannot compare"},
		{"not logged in", map[string]string{"AUTH": "missing"}, nil, "not logged in"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.knobs {
				t.Setenv("STANDIN_CRABBOX_"+k, v)
			}
			p, spec := w.provider(), w.spec("0123456789ab")
			if c.edit != nil {
				c.edit(&p)
			}
			before := len(w.calls("warmup"))
			err := p.Create(t.Context(), spec)
			if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Create = %v; want ErrUnavailable saying %q", err, c.want)
			}
			if len(w.calls("warmup")) != before {
				t.Error("a box was asked for")
			}
			for k := range c.knobs {
				t.Setenv("STANDIN_CRABBOX_"+k, "")
			}
			if err := p.Discard(t.Context(), spec); err != nil {
				t.Errorf("Discard: %v", err)
			}
		})
	}
}
