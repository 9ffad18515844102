package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/git-lease/git-lease/sandbox"
)

// errGateFailed makes git lease gate exit 1 once its record is kept.
var errGateFailed = errors.New("the feasibility gate failed")

func gateCommand() *cli.Command {
	return &cli.Command{
		Name:  "gate",
		Usage: "prove that sandboxed leases work on this machine before any start relies on them",
		Description: `Gate runs the feasibility spike in a fixture repository it makes in a
temporary directory (never in yours) and proves each point with one line of
evidence: the sandbox holds exactly the committed base, with no mount of the
checkout; an agent runs while the supervisor reports its lifecycle; prompt,
blocked, completion, reconnect and cancellation are observed; a patch and its
check evidence come back without host access; two leases running at once cannot
see each other; cleanup is confirmed and a second one changes nothing.

The record, passed or failed, names the provider, the supervisor, their
versions, the kernel and git-lease's version. It is kept for your user on this
machine (where sandboxed starts look for it) and, as a signed commit, on
refs/lease-gates/PROVIDER/SUPERVISOR of this repository. A sandboxed start
without a passing record for its setup runs the gate first, or refuses when
trusted policy says gate = "require". It exits 1 when a point fails.

Example:
   git lease gate
   git lease gate --supervisor herdr --json`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "provider", Usage: "the provider to prove (default: trusted policy's; only bwrap is gated)"},
			&cli.StringFlag{Name: "supervisor", Usage: "headless or herdr (default: git config lease.supervisor, else headless)"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			repo, err := openRepo()
			if err != nil {
				return err
			}
			r, err := gitlease.RunGate(context.Background(), repo, gitlease.GateOptions{
				Provider: sandbox.ProviderName(c.String("provider")), Supervisor: c.String("supervisor"), Version: version, Progress: progress,
			})
			if r == nil {
				return err
			}
			if c.Bool("json") {
				printJSON(os.Stdout, r)
			} else {
				for _, p := range r.Points {
					mark := "ok"
					if !p.Passed {
						mark = "FAILED"
					}
					fmt.Printf("%s: %s: %s\n", p.Name, mark, p.Evidence)
				}
			}
			if err != nil {
				return err
			}
			if !r.Passed {
				return errGateFailed
			}
			return nil
		},
	}
}
