package crabbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/git-lease/git-lease/sandbox"
)

// Discard stops the lease's box with `crabbox stop --id ID` and confirms it
// is gone before removing the lease's directory: `crabbox status --id ID`
// exits 4 or shows a terminal state, and the ID is in neither `crabbox list
// --json` nor `crabbox claims list --json`. A stop answering 4 (not found)
// is fine: the confirmation decides. What is not confirmed gone is an
// error that says what is still there, and the lease's directory is kept
// for another try. The box is the recorded one, else the one claimed in the
// lease's state directory, else cbx_<ID> when a warmup asked for it and
// Crabbox did not refuse it (a fixed-ID warmup interrupted before it printed
// anything). A lease where Create never reached Crabbox, or never asked for
// a box Crabbox did not refuse, or that is already discarded, has nothing
// to stop: Discard is idempotent.
func (p Provider) Discard(ctx context.Context, spec sandbox.Spec) error {
	if _, err := os.Stat(layout(spec).config); errors.Is(err, fs.ErrNotExist) {
		return os.RemoveAll(spec.Dir)
	}
	b, found, err := p.findBox(ctx, spec)
	if err != nil {
		return err
	}
	id := b.ID
	if !found {
		if _, err := os.Stat(layout(spec).asked); errors.Is(err, fs.ErrNotExist) {
			return os.RemoveAll(spec.Dir)
		}
		id = "cbx_" + spec.ID
	}
	c, err := p.run(ctx, spec, nil, "stop", "--provider", p.CrabboxProvider, "--id", id)
	switch {
	case err != nil:
		return err
	case c.code != 0 && c.code != 4:
		return fmt.Errorf("stop crabbox box %s of lease %s: %w", id, spec.ID, c.err())
	}
	if err := p.confirmGone(ctx, spec, id); err != nil {
		return err
	}
	return os.RemoveAll(spec.Dir)
}

// confirmGone checks that Crabbox knows the box no more.
func (p Provider) confirmGone(ctx context.Context, spec sandbox.Spec, id string) error {
	var still []string
	s, gone, err := p.status(ctx, spec, id, false)
	if err != nil {
		return fmt.Errorf("confirm crabbox box %s is gone: %w", id, err)
	}
	if !gone && !s.terminal() {
		still = append(still, fmt.Sprintf("status shows it in state %q", s.State))
	}
	c, err := p.run(ctx, spec, nil, "list", "--provider", p.CrabboxProvider, "--json")
	if err != nil {
		return err
	}
	var listed any
	if c.code != 0 || json.Unmarshal(c.stdout, &listed) != nil {
		return fmt.Errorf("confirm crabbox box %s is gone: %w", id, c.err())
	}
	if mentions(listed, id) {
		still = append(still, "`crabbox list` still shows it")
	}
	claimed, err := p.claimed(ctx, spec)
	if err != nil {
		return err
	}
	for _, claim := range claimed {
		if claim == id {
			still = append(still, "its local claim is still in "+layout(spec).state)
		}
	}
	if len(still) > 0 {
		return fmt.Errorf("crabbox box %s of lease %s is not confirmed gone: %s; stop it with `CRABBOX_CONFIG=%s XDG_STATE_HOME=%s crabbox stop --provider %s --id %s`, then discard again",
			id, spec.ID, strings.Join(still, "; "), layout(spec).config, layout(spec).state, p.CrabboxProvider, id)
	}
	return nil
}

// mentions reports whether id appears as a string anywhere in v, a decoded
// JSON value: list --json has a shape of its own per provider.
func mentions(v any, id string) bool {
	switch v := v.(type) {
	case string:
		return v == id
	case []any:
		for _, e := range v {
			if mentions(e, id) {
				return true
			}
		}
	case map[string]any:
		for _, e := range v {
			if mentions(e, id) {
				return true
			}
		}
	}
	return false
}
