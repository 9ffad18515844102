package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/git-lease/git-lease/gitlease/escape"
)

func waitCommand() *cli.Command {
	return &cli.Command{
		Name:      "wait",
		Usage:     "wait for a detached lease to finish and be collected",
		ArgsUsage: "ID",
		Description: `Wait blocks until the lease's runner has collected its result (or --timeout
passes; the lease goes on). The runner records that you reconnected. It exits
like start: 0 in review, 1 when the lease failed, was quarantined or canceled.

Example:
   git lease start --detach --prompt "fix the flaky test" -- claude -p
   git lease wait 3f9c --timeout 30m`,
		Flags: []cli.Flag{&cli.DurationFlag{Name: "timeout", Usage: "give up waiting after this long (the lease goes on)"}, jsonFlag},
		Action: func(c *cli.Context) error {
			x, err := loadOne(c)
			if err != nil {
				return err
			}
			err = gitlease.Wait(c.Context, x, c.Duration("timeout"))
			if c.Bool("json") {
				printJSON(os.Stdout, toJSON(x))
			} else {
				fmt.Println(x.Lease.ID)
			}
			if errors.Is(err, gitlease.ErrTimeout) {
				return cli.Exit(err.Error(), exitTimeout)
			}
			if err != nil {
				return err
			}
			return settledExit(x)
		},
	}
}

// settledExit reports a settled lease the way start does.
func settledExit(x *gitlease.Execution) error {
	if x.Lease.State == gitlease.Review || x.Lease.State == gitlease.Applied {
		fmt.Fprintf(os.Stderr, "lease %s: %s: %s\n", x.Lease.ID, x.Lease.State, escape.Line(x.Lease.Result.Summary))
		return nil
	}
	fmt.Fprintf(os.Stderr, "git-lease: lease %s is %s: %s\n", x.Lease.ID, x.Lease.State, escape.Line(x.Lease.Reason))
	return errLeaseFailed
}

// loadOne loads the lease named by a command's one ID argument.
func loadOne(c *cli.Context) (*gitlease.Execution, error) {
	id, err := oneID(c)
	if err != nil {
		return nil, err
	}
	repo, err := openRepo()
	if err != nil {
		return nil, err
	}
	return gitlease.LoadPrefix(repo, id)
}

func cancelCommand() *cli.Command {
	return &cli.Command{
		Name:      "cancel",
		Usage:     "stop a running lease's agent: interrupt, then kill after a grace period",
		ArgsUsage: "ID",
		Description: `Cancel asks the lease's runner to stop the agent: SIGINT first (Ctrl-C in a
Herdr pane), then a kill of the whole sandbox after --grace. The lease ends
canceled; what the agent changed stays in the sandbox and is listed in the log,
and is materialized only if you ask with git lease collect --partial.

Example:
   git lease cancel 3f9c --grace 30s`,
		Flags: []cli.Flag{&cli.DurationFlag{Name: "grace", Value: gitlease.CancelGrace, Usage: "how long the agent has to stop after the interrupt"}},
		Action: func(c *cli.Context) error {
			x, err := loadOne(c)
			if err != nil {
				return err
			}
			if err := gitlease.Cancel(c.Context, x, c.Duration("grace")); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "lease %s: %s: %s\n", x.Lease.ID, x.Lease.State, escape.Line(x.Lease.Reason))
			return nil
		},
	}
}

func attachCommand() *cli.Command {
	return &cli.Command{
		Name:      "attach",
		Usage:     "bring a lease's Herdr pane forward",
		ArgsUsage: "ID",
		Description: `Attach focuses the lease's Herdr pane. It is the only thing git-lease ever
focuses, and only because you asked. A headless lease has no pane: follow it
with git lease logs --follow.

Example:
   git lease attach 3f9c`,
		Action: func(c *cli.Context) error {
			x, err := loadOne(c)
			if err != nil {
				return err
			}
			return gitlease.Attach(c.Context, x)
		},
	}
}

func collectCommand() *cli.Command {
	return &cli.Command{
		Name:      "collect",
		Usage:     "collect what a canceled or failed agent left (--partial)",
		ArgsUsage: "--partial ID",
		Description: `Collect --partial takes the changes a canceled or failed agent left in its
sandbox (an agent that exited non-zero, or whose runner vanished), verifies
and signs them like any result, and moves the lease to review: the result
is checked out only into the lease's review worktree. It needs the sandbox,
so run it before git lease cleanup.

Example:
   git lease collect --partial 3f9c`,
		Flags: []cli.Flag{&cli.BoolFlag{Name: "partial", Usage: "collect a canceled or failed lease's partial changes"}},
		Action: func(c *cli.Context) error {
			if !c.Bool("partial") {
				return usagef("collect needs --partial: a finished lease is collected by its runner")
			}
			x, err := loadOne(c)
			if err != nil {
				return err
			}
			if err := gitlease.CollectPartial(c.Context, x, progress); err != nil {
				return err
			}
			if x.Lease.State == gitlease.Review {
				return nil // the progress said so
			}
			return settledExit(x)
		},
	}
}
