package crabbox

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/git-lease/git-lease/sandbox"
)

// Create leases the lease's box and prepares what Launch runs from: the
// lease's Crabbox config and state directory, and the seed repository
// holding the base. It refuses a Crabbox provider that policy does not
// count as sandboxed, and fails closed with sandbox.ErrUnavailable when
// crabbox is missing, too old, not logged in or reports the provider not
// ready.
//
// It never leases a second box for one lease: a box recorded in box.json,
// or claimed in the lease's own state directory, is checked with `crabbox
// status --wait` instead, and a box that is gone is an error (discard the
// lease). So Create is idempotent. A new box is leased with `crabbox warmup
// --provider P --lease-id cbx_<ID> --keep`; when the provider does not take
// requested IDs (exit 2), warmup runs again without --lease-id and the ID
// Crabbox chose is recorded. The ID is recorded as soon as warmup prints
// it, so a box whose warmup fails later is still found by Discard. An ID
// under which Crabbox holds a live box this lease did not lease, or holds
// with another create intent or as released, fails with
// ErrLeaseIDConflict.
func (p Provider) Create(ctx context.Context, spec sandbox.Spec) error {
	if err := p.check(spec); err != nil {
		return err
	}
	if _, err := p.bin(); err != nil {
		return err
	}
	if err := p.prepare(spec); err != nil {
		return err
	}
	if err := p.checkVersion(ctx, spec); err != nil {
		return err
	}
	if err := seed(ctx, spec); err != nil {
		return err
	}
	b, found, err := p.findBox(ctx, spec)
	if err != nil {
		return err
	}
	if found {
		return p.alive(ctx, spec, b.ID)
	}
	if err := p.doctor(ctx, spec); err != nil {
		return err
	}
	return p.warmup(ctx, spec)
}

// alive checks that a recorded box is still there and ready.
func (p Provider) alive(ctx context.Context, spec sandbox.Spec, id string) error {
	s, gone, err := p.status(ctx, spec, id, true)
	switch {
	case err != nil:
		return fmt.Errorf("crabbox box %s of lease %s is not usable: %w", id, spec.ID, err)
	case gone || s.terminal():
		return fmt.Errorf("crabbox box %s of lease %s is gone (state %q); a lease never gets a second box: discard this lease and start a new one", id, spec.ID, s.State)
	case !s.Ready:
		return fmt.Errorf("crabbox box %s of lease %s is not ready (state %q)", id, spec.ID, s.State)
	}
	return nil
}

// warmup leases a new box, asking for the lease's own ID first.
func (p Provider) warmup(ctx context.Context, spec sandbox.Spec) error {
	requested := "cbx_" + spec.ID
	if err := p.notHeld(ctx, spec, requested); err != nil {
		return err
	}
	// Recorded before asking, so that Discard stops a box leased under it
	// by a warmup that was cut short before it printed anything.
	if err := writeFile(layout(spec).asked, []byte(requested+"\n"), 0o600); err != nil {
		return err
	}
	id, c, err := p.warmupOnce(ctx, spec, requested)
	if err != nil {
		return err
	}
	conflict := c.code == 4 && strings.Contains(c.stderr, "lease_id_conflict")
	if id == "" && (conflict || c.code == 2) {
		// Crabbox refused the ID: whatever it holds under it is not this
		// lease's, and Discard must never stop it.
		if err := os.Remove(layout(spec).asked); err != nil {
			return err
		}
	}
	switch {
	case conflict:
		return fmt.Errorf("%w: crabbox refuses %s for lease %s (%s); the ID was used before with other settings or has been released: start a new lease", ErrLeaseIDConflict, requested, spec.ID, c.message())
	case c.code == 2 && id == "":
		// Exit 2 before any box: the provider may not take requested IDs
		// ("does not support fixed idempotent lease IDs"). Retry without
		// one, unless that first warmup left a claim after all.
		b, found, err := p.findBox(ctx, spec)
		if err != nil {
			return err
		}
		if found {
			return p.alive(ctx, spec, b.ID)
		}
		if id, c, err = p.warmupOnce(ctx, spec, ""); err != nil {
			return err
		}
	}
	switch {
	case c.code != 0:
		return fmt.Errorf("crabbox could not lease a box for lease %s: %w", spec.ID, c.err())
	case id == "":
		return fmt.Errorf("crabbox warmup succeeded without printing a `leased <id>` line: this crabbox speaks another contract")
	}
	return nil
}

// notHeld refuses to request an ID under which Crabbox already holds a
// live box that this lease has neither recorded nor claimed: warmup would
// answer a replayed fixed ID with that box, which is another lease's (the
// same execution ID in another clone, or a stale lease directory). Only a
// status that shows the box alive refuses; any other answer leaves the
// decision to warmup.
func (p Provider) notHeld(ctx context.Context, spec sandbox.Spec, id string) error {
	s, gone, err := p.status(ctx, spec, id, false)
	if err != nil || gone || s.terminal() {
		return nil
	}
	return fmt.Errorf("%w: crabbox already holds a box %s (state %q) that lease %s did not lease here (its execution ID is in use elsewhere, for example in another clone); start a new lease", ErrLeaseIDConflict, id, s.State, spec.ID)
}

// warmupOnce runs warmup once (with the requested ID, when not empty) and
// records the box as soon as warmup prints its leased line. It returns the
// leased ID ("" when none was printed).
func (p Provider) warmupOnce(ctx context.Context, spec sandbox.Spec, requested string) (string, call, error) {
	args := []string{"warmup", "--provider", p.CrabboxProvider}
	if requested != "" {
		args = append(args, "--lease-id", requested)
	}
	args = append(append(args, p.lifetimeFlags()...), "--keep")
	var id string
	var recordErr error
	c, err := p.run(ctx, spec, func(line string) {
		leased, ok := parseLeased(line)
		if !ok || id != "" {
			return
		}
		id = leased
		if !boxID().MatchString(leased) {
			recordErr = fmt.Errorf("crabbox leased a box with a malformed ID %q; stop it with crabbox by hand", leased)
			return
		}
		recordErr = writeBox(spec, box{ID: leased, Requested: leased == requested})
	}, args...)
	switch {
	case recordErr != nil:
		return id, c, recordErr
	case err == nil && c.code == 0 && requested != "" && id != "" && id != requested:
		return id, c, fmt.Errorf("crabbox leased %s although %s was requested; the box is recorded: discard the lease", id, requested)
	}
	return id, c, err
}

// parseLeased reads warmup's first stdout line, `leased <id> slug=…
// provider=… …`.
func parseLeased(line string) (string, bool) {
	fields := strings.Fields(line)
	if len(fields) < 2 || fields[0] != "leased" {
		return "", false
	}
	return fields[1], true
}
