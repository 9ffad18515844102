package main

import (
	"errors"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/git-lease/git-lease/gitlease/escape"
	"github.com/git-lease/git-lease/refs"
)

// errDiverged is returned by fetch when a fetched ref diverged from the local one.
var errDiverged = errors.New("diverged from the remote's and left as they are (see above): compare both and decide")

func fetchCommand() *cli.Command {
	return &cli.Command{
		Name:      "fetch",
		Usage:     "fetch a remote's leases and integrate them without overwriting yours",
		ArgsUsage: "[REMOTE]",
		Description: `Fetch fetches REMOTE's lease logs, review branches and notes into
refs/remotes/REMOTE/leases/ID, refs/remotes/REMOTE/lease/ID and
refs/remotes/REMOTE/notes/leases, then integrates them: a lease you do not have
is created, a log or branch behind the remote's is fast-forwarded, and one that
diverged from the remote's is reported and never overwritten (exit 1). Each
fetched log is read first: one whose record git-lease cannot read (no
lease.json, a record naming another lease) is kept out of refs/leases, with its
review branch, and listed as skipped with the reason. When allowed signers are
configured (git config lease.allowedSignersFile, else
gpg.ssh.allowedSignersFile), each fetched lease is also verified as git lease
verify would (your own key counts), and one that does not verify is kept out
the same way. Notes are
merged so that none is lost. REMOTE must be a configured remote; it defaults to
the remote of the current branch's upstream, else origin. A plain
git fetch --prune deletes refs/remotes/REMOTE/leases/*: git lease fetch again.

Example:
   git lease fetch origin
   git lease ls --remote origin
   git lease verify --all`,
		Flags: []cli.Flag{jsonFlag},
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return usagef("fetch takes at most one remote")
			}
			repo, err := openRepo()
			if err != nil {
				return err
			}
			remote := c.Args().First()
			if remote == "" {
				remote = repo.DefaultRemote(c.Context)
			}
			rep, err := gitlease.Fetch(c.Context, repo, remote)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				if err := printJSON(os.Stdout, toFetchJSON(remote, rep)); err != nil {
					return err
				}
			} else if err := printFetch(remote, rep); err != nil {
				return err
			}
			if n := len(rep.Diverged); n > 0 {
				return fmt.Errorf("%d ref(s) %w", n, errDiverged)
			}
			return nil
		},
	}
}

// printFetch prints what fetch did with each ref that changed or needs the
// user, then one line of counts.
func printFetch(remote string, rep *refs.FetchReport) error {
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	for _, s := range rep.Created {
		fmt.Fprintf(w, "created\t%s\t%s\n", s.Name, s.Remote.String()[:12])
	}
	for _, s := range rep.FastForwarded {
		fmt.Fprintf(w, "fast-forward\t%s\t%s..%s\n", s.Name, s.Local.String()[:12], s.Remote.String()[:12])
	}
	for _, s := range rep.Diverged {
		fmt.Fprintf(w, "DIVERGED\t%s\tyours %s, %s's %s: left as it is (git log %s...%s)\n",
			s.Name, s.Local.String()[:12], remote, s.Remote.String()[:12], s.Local.String()[:12], s.Remote.String()[:12])
	}
	for _, s := range rep.Skipped {
		fmt.Fprintf(w, "skipped\t%s\t%s\n", escape.Line(s.Name), escape.Line(s.Reason))
	}
	if rep.NotesMerged {
		fmt.Fprintf(w, "merged\t%s\tyour notes and %s's, none lost\n", refs.NotesRef, remote)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	_, err := fmt.Printf("fetched from %s: %d created, %d fast-forwarded, %d up to date, %d diverged\n",
		remote, len(rep.Created), len(rep.FastForwarded), len(rep.UpToDate), len(rep.Diverged))
	return err
}

// fetchJSON is the --json output of fetch: the CLI contract, apart from refs.FetchReport.
type fetchJSON struct {
	Remote        string         `json:"remote"`
	Created       []refStateJSON `json:"created"`
	FastForwarded []refStateJSON `json:"fast_forwarded"`
	UpToDate      []refStateJSON `json:"up_to_date"`
	Diverged      []refStateJSON `json:"diverged"`
	Skipped       []skippedJSON  `json:"skipped"`
	NotesMerged   bool           `json:"notes_merged"`
}

// refStateJSON is a local ref next to the fetched one; "" for a ref that did not exist.
type refStateJSON struct {
	Ref    string `json:"ref"`
	Local  string `json:"local"`
	Remote string `json:"remote"`
}

type skippedJSON struct {
	Ref    string `json:"ref"`
	Reason string `json:"reason"`
}

func toFetchJSON(remote string, rep *refs.FetchReport) fetchJSON {
	states := func(in []refs.RefState) []refStateJSON {
		out := []refStateJSON{}
		for _, s := range in {
			j := refStateJSON{Ref: s.Name, Remote: s.Remote.String()}
			if !s.Local.IsZero() {
				j.Local = s.Local.String()
			}
			out = append(out, j)
		}
		return out
	}
	j := fetchJSON{Remote: remote, Created: states(rep.Created), FastForwarded: states(rep.FastForwarded),
		UpToDate: states(rep.UpToDate), Diverged: states(rep.Diverged), Skipped: []skippedJSON{}, NotesMerged: rep.NotesMerged}
	for _, s := range rep.Skipped {
		j.Skipped = append(j.Skipped, skippedJSON{Ref: s.Name, Reason: s.Reason})
	}
	return j
}
