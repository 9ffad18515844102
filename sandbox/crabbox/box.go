package crabbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"sync"

	"github.com/git-lease/git-lease/sandbox"
)

// box is the record of a lease's box, in box.json.
type box struct {
	Version int    `json:"version"`
	ID      string `json:"id"`
	// Requested is true when the ID is the lease's own (cbx_<execution
	// ID>), requested with --lease-id; false when Crabbox chose it.
	Requested bool `json:"requested"`
}

const boxVersion = 1

// boxID is the shape of the box IDs Crabbox prints (cbx_<hex> for most
// providers; some use their own prefix, like blx_ or vsbx_).
// Compiled on first use: a counted repetition compiles into a program
// of one node per count, milliseconds that every start of the binary (the
// sandbox's init included) would pay.
var boxID = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[a-z][a-z0-9]*_[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
})

// Identity returns the ID of the Crabbox box leased for spec, as Create
// recorded it (cbx_<execution ID> when the provider took the requested ID,
// else the one Crabbox chose), so the lease can bind it in its log before
// the agent is prompted. It returns an error wrapping ErrNoBox when Create
// has not leased a box. It only reads, so it can be called any number of
// times.
func (Provider) Identity(spec sandbox.Spec) (string, error) {
	b, err := readBox(spec)
	return b.ID, err
}

func readBox(spec sandbox.Spec) (box, error) {
	var b box
	data, err := os.ReadFile(layout(spec).box)
	if errors.Is(err, fs.ErrNotExist) {
		return b, fmt.Errorf("lease %s: %w (create the sandbox first)", spec.ID, ErrNoBox)
	}
	if err != nil {
		return b, err
	}
	if err := json.Unmarshal(data, &b); err != nil || b.Version != boxVersion || !boxID().MatchString(b.ID) {
		return box{}, fmt.Errorf("lease %s: %s is not a box record of version %d", spec.ID, layout(spec).box, boxVersion)
	}
	return b, nil
}

func writeBox(spec sandbox.Spec, b box) error {
	b.Version = boxVersion
	data, err := json.Marshal(b)
	if err != nil {
		return err
	}
	return writeFile(layout(spec).box, append(data, '\n'), 0o600)
}

// findBox returns the lease's box: the recorded one or, when none is
// recorded, the one Crabbox claimed in the lease's own state directory (a
// box leased by a crabbox that was interrupted before git-lease recorded
// it), which it then records. found is false when there is neither.
func (p Provider) findBox(ctx context.Context, spec sandbox.Spec) (b box, found bool, err error) {
	b, err = readBox(spec)
	if !errors.Is(err, ErrNoBox) {
		return b, err == nil, err
	}
	ids, err := p.claimed(ctx, spec)
	switch {
	case err != nil:
		return box{}, false, err
	case len(ids) == 0:
		return box{}, false, nil
	case len(ids) > 1:
		return box{}, false, fmt.Errorf("crabbox holds %d claims (%s) in lease %s's own state directory, which should hold at most one; stop them with crabbox, then discard the lease", len(ids), strings.Join(ids, ", "), spec.ID)
	}
	b = box{ID: ids[0], Requested: ids[0] == "cbx_"+spec.ID}
	return b, true, writeBox(spec, b)
}

// claimed lists the lease IDs of the local claims in the lease's own state
// directory (`crabbox claims list --json`, which reads no provider).
func (p Provider) claimed(ctx context.Context, spec sandbox.Spec) ([]string, error) {
	c, err := p.run(ctx, spec, nil, "claims", "list", "--json")
	if err != nil {
		return nil, err
	}
	var out struct {
		Claims []struct {
			LeaseID string `json:"leaseId"`
		} `json:"claims"`
	}
	// Exit 2 means some claim files are malformed; the valid ones are
	// still listed.
	if (c.code != 0 && c.code != 2) || json.Unmarshal(c.stdout, &out) != nil {
		return nil, fmt.Errorf("list crabbox claims: %w", c.err())
	}
	var ids []string
	for _, claim := range out.Claims {
		if !boxID().MatchString(claim.LeaseID) {
			return nil, fmt.Errorf("crabbox lists a claim with a malformed lease ID %q", claim.LeaseID)
		}
		ids = append(ids, claim.LeaseID)
	}
	return ids, nil
}

// boxStatus is the part of `crabbox status --json` git-lease reads.
type boxStatus struct {
	ID    string `json:"id"`
	State string `json:"state"`
	Ready bool   `json:"ready"`
}

// terminal reports whether a status state means the box is gone (Crabbox's
// own list of terminal states).
func (s boxStatus) terminal() bool {
	switch strings.ToLower(strings.TrimSpace(s.State)) {
	case "deleting", "expired", "failed", "missing", "released", "stopped", "stopped_with_code", "terminated":
		return true
	}
	return false
}

// status asks `crabbox status --id ID --json` (with --wait: until the box
// is ready or terminal, exiting 5 when it ends terminal or the wait times
// out). gone is true when Crabbox does not know the box (exit 4); any
// other failure is an error.
func (p Provider) status(ctx context.Context, spec sandbox.Spec, id string, wait bool) (s boxStatus, gone bool, err error) {
	args := []string{"status", "--provider", p.CrabboxProvider, "--id", id, "--json"}
	if wait {
		args = append(args, "--wait")
	}
	c, err := p.run(ctx, spec, nil, args...)
	switch {
	case err != nil:
		return s, false, err
	case c.code == 4:
		return s, true, nil
	case c.code != 0:
		return s, false, c.err()
	}
	if err := json.Unmarshal(c.stdout, &s); err != nil || s.ID != id {
		return s, false, fmt.Errorf("crabbox status --id %s answered something else than that box's status: %.200q", id, c.stdout)
	}
	return s, false, nil
}
