package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/git-lease/git-lease/gitlease/escape"
	"github.com/git-lease/git-lease/refs"
	"github.com/urfave/cli/v2"
)

var jsonFlag = &cli.BoolFlag{Name: "json", Usage: "print machine-readable JSON on standard output"}

// progress is standard error for gitlease's progress lines, which quote
// agents' text (a quarantined result's first finding). Each is a whole
// line, so the writer never holds a partial sequence to flush.
var progress = escape.NewWriter(os.Stderr)

// openRepo opens the repository around the current directory.
func openRepo() (*refs.Repo, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	return refs.Open(wd)
}

// oneID returns the single ID argument of a command.
func oneID(c *cli.Context) (string, error) {
	if c.NArg() != 1 {
		return "", usagef("%s needs one lease ID (see git lease ls)", c.Command.Name)
	}
	return c.Args().First(), nil
}

// leaseJSON is the JSON form of a lease: the stored record plus what is
// derived locally. It is the CLI contract; the stored format may grow apart.
type leaseJSON struct {
	*gitlease.Lease
	Worktree string `json:"worktree"`
	Log      string `json:"log"`
	// StartedElsewhere marks a lease that came with git lease fetch from
	// the clone that runs it (its worktree is then "").
	StartedElsewhere bool `json:"started_elsewhere,omitempty"`
	// ReadOnly marks a record written by a newer git-lease: shown from
	// what this one knows of it, never changed.
	ReadOnly bool `json:"read_only,omitempty"`
}

func toJSON(x *gitlease.Execution) leaseJSON {
	if x.StartedElsewhere() {
		return leaseJSON{Lease: x.Lease, Log: x.Tip.String(), StartedElsewhere: true, ReadOnly: x.ReadOnly()}
	}
	return leaseJSON{Lease: x.Lease, Worktree: x.Worktree(), Log: x.Tip.String(), ReadOnly: x.ReadOnly()}
}

// printJSON prints v indented, with the C1 and bidi controls that
// encoding/json leaves raw escaped as well, since records hold text that
// agents wrote and JSON is read on terminals too.
func printJSON(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(escape.JSON(b.Bytes()))
	return err
}

// modeLabel never lets trusted_local read as a sandbox.
func modeLabel(l *gitlease.Lease) string {
	if l.Mode == gitlease.TrustedLocal || !l.Sandboxed {
		return string(l.Mode) + " (NOT sandboxed: the agent ran as you)"
	}
	return fmt.Sprintf("%s (%s)", l.Mode, l.Provider)
}
