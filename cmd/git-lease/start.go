package main

import (
	"context"
	"fmt"
	"os"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/git-lease/git-lease/gitlease/escape"
	"github.com/urfave/cli/v2"
)

func startCommand() *cli.Command {
	return &cli.Command{
		Name:      "start",
		Usage:     "run an agent command in a new lease and collect its result for review",
		ArgsUsage: "[--] CMD [ARGS…] | --agent NAME --prompt TEXT",
		Description: `Start creates lease ID: a base commit (HEAD, or --base), a branch lease/ID
at that base, a review worktree under .git/lease/worktrees/ID, and a log at
refs/leases/ID. It runs CMD, waits for it, computes the result on the host
and moves the lease to review. The ID is printed on standard output; the
agent's output and progress go to standard error.

--agent NAME runs an agent preset (see git lease agents) instead of CMD:
its command (with the prompt in it where it says {prompt}), its destinations
on the lease's network allowlist, its credentials passed to the agent alone.

A sandboxed lease has no network unless trusted policy allows destinations
([network] allow); --net DEST picks some of them. --credential NAME passes
a credential that trusted policy allows (credentials) to this lease's agent
only: the record keeps its name and fingerprint, never its value.

--mode trusted_local runs CMD as you, with your environment, in the review
worktree: it is NOT a sandbox and is labelled so everywhere.

Example:
   git lease start --agent claude --prompt 'fix the failing test'
   git lease start --net api.example.com:443 --credential API_TOKEN -- ./agent.sh
   git lease start --mode trusted_local -- sh -c 'echo hi > new.txt; rm old.txt'`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "mode", Value: string(gitlease.Sandboxed), Usage: "sandboxed or trusted_local"},
			&cli.StringFlag{Name: "base", Usage: "the committed revision the lease starts from (default: HEAD)"},
			&cli.StringFlag{Name: "mission", Usage: "the mission (task, ticket) this lease serves"},
			&cli.BoolFlag{Name: "read-only", Usage: "run the agent on its base with /work read-only (a reviewer, a test runner): its output is its evidence"},
			&cli.StringFlag{Name: "parent", Usage: "start a child of lease `ID`, in its mission, recorded in both logs"},
			&cli.BoolFlag{Name: "snapshot", Usage: "base the lease on a snapshot commit of your uncommitted changes (otherwise they never reach the agent)"},
			&cli.StringSliceFlag{Name: "check", Usage: "a check command to run against the result in a fresh sandbox (repeatable)"},
			&cli.StringSliceFlag{Name: "artifact", Usage: "a workspace file to keep in the lease log, bounded (repeatable)"},
			&cli.StringFlag{Name: "prompt", Usage: "the prompt, given to the agent on standard input once the lease's identities are recorded"},
			&cli.StringFlag{Name: "prompt-file", Usage: "read the prompt from this file"},
			&cli.BoolFlag{Name: "private-prompt", Usage: "record only the prompt's sha256, not its text"},
			&cli.BoolFlag{Name: "tty", Usage: "run the agent on a pseudo-terminal of its own"},
			&cli.StringFlag{Name: "supervisor", Usage: "headless (default: git config lease.supervisor, else headless) or herdr"},
			&cli.BoolFlag{Name: "detach", Aliases: []string{"d"}, Usage: "return once the agent runs; git lease wait collects it"},
			&cli.StringFlag{Name: "agent", Usage: "run agent preset `NAME` (see git lease agents) instead of a command"},
			&cli.StringSliceFlag{Name: "net", Usage: "reach only `DEST` (host:port) of the policy's network allowlist (repeatable)"},
			&cli.StringSliceFlag{Name: "credential", Usage: "pass credential `NAME`, which policy allows, to this lease's agent (repeatable)"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "do not echo the agent's output"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			opts := gitlease.StartOptions{
				Mode: gitlease.Mode(c.String("mode")), Base: c.String("base"),
				Mission: c.String("mission"), Parent: c.String("parent"), ReadOnly: c.Bool("read-only"), Snapshot: c.Bool("snapshot"), Command: c.Args().Slice(), Progress: progress,
				Checks: c.StringSlice("check"), Artifacts: c.StringSlice("artifact"),
				Prompt: c.String("prompt"), PrivatePrompt: c.Bool("private-prompt"), TTY: c.Bool("tty"),
				Supervisor: c.String("supervisor"), Detach: c.Bool("detach"),
				Agent: c.String("agent"), Net: c.StringSlice("net"), Credentials: c.StringSlice("credential"),
				Gate: &gitlease.GateCheck{Version: version, Progress: progress},
			}
			if f := c.String("prompt-file"); f != "" {
				if opts.Prompt != "" {
					return usagef("give --prompt or --prompt-file, not both")
				}
				b, err := os.ReadFile(f)
				if err != nil {
					return err
				}
				opts.Prompt = string(b)
			}
			if !c.Bool("quiet") {
				live := escape.NewWriter(os.Stderr) // the agent's output, escaped as logs escapes it
				defer live.Close()
				opts.Output = live
			}
			if opts.Mode != gitlease.Sandboxed && opts.Mode != gitlease.TrustedLocal {
				return usagef("unknown --mode %q: use sandboxed or trusted_local", opts.Mode)
			}
			switch {
			case len(opts.Command) == 0 && opts.Agent == "":
				return usagef("start needs an agent command after --, as in: git lease start -- make fix")
			case len(opts.Command) > 0 && opts.Agent != "":
				return usagef("--agent %s gives the agent's command: give either --agent or a command after --", opts.Agent)
			}
			return runStart(opts, c.Bool("json"))
		},
	}
}

func runStart(opts gitlease.StartOptions, asJSON bool) error {
	repo, err := openRepo()
	if err != nil {
		return err
	}
	x, err := gitlease.Start(context.Background(), repo, opts)
	if x == nil {
		return err
	}
	if asJSON {
		printJSON(os.Stdout, toJSON(x))
	} else {
		fmt.Println(x.Lease.ID)
	}
	if err != nil {
		return err
	}
	if opts.Detach && !x.Lease.State.Settled() {
		return nil
	}
	if x.Lease.State != gitlease.Review {
		fmt.Fprintf(os.Stderr, "git-lease: lease %s is %s: %s\n", x.Lease.ID, x.Lease.State, escape.Line(x.Lease.Reason))
		return errLeaseFailed
	}
	return nil
}
