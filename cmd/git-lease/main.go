// Command git-lease runs coding agents in disposable leases and hands their
// work back as reviewable, verified results. Installed on PATH it is also
// `git lease`. This package is only the command-line surface: each command
// parses its flags into an options struct and calls a run function.
package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/git-lease/git-lease/gitlease/escape"
	"github.com/git-lease/git-lease/sandbox"
	"github.com/git-lease/git-lease/sandbox/bwrap"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	if len(os.Args) > 1 && os.Args[1] == bwrap.InitArg {
		bwrap.Init() // the sandbox's init: never returns
	}
	// Whatever git-lease inherited stays here: no agent, sandbox, check
	// or provider program it starts gets a descriptor but the ones handed
	// to it.
	if err := sandbox.CloseOnExec(); err != nil {
		fmt.Fprintf(os.Stderr, "git-lease: mark inherited descriptors close-on-exec: %v\n", err)
		os.Exit(125)
	}
	if len(os.Args) > 1 && os.Args[1] == bwrap.ForwardArg {
		bwrap.RunForwarder(os.Args[2:]) // the sandbox's network forwarder: never returns
	}
	if len(os.Args) > 1 && os.Args[1] == gitlease.RunnerArg {
		os.Exit(runRunner(os.Args[2:]))
	}
	os.Exit(run(os.Args))
}

func run(args []string) int {
	app := newApp()
	err := app.Run(permute(app, args))
	return exitCode(err)
}

func newApp() *cli.App {
	return &cli.App{
		Name:    "git lease",
		Usage:   "run a coding agent in a disposable lease and review its work as a git branch",
		Version: version,
		Description: `Each lease has an immutable base commit, its own branch lease/ID, a review
worktree outside your checkout, and a log at refs/leases/ID that you can push,
fetch and verify with ordinary git. The host computes the agent's patch; your
checkout and branches are never touched until you apply.

Example:
   git lease start --mode trusted_local -- sh -c 'echo hi > new.txt'
   git lease show 3f9c
   git lease diff 3f9c`,
		HideHelpCommand: false,
		Commands: []*cli.Command{
			startCommand(),
			lsCommand(),
			showCommand(),
			diffCommand(),
			logsCommand(),
			policyCommand(),
			agentsCommand(),
			reviewCommand(),
			applyCommand(),
			rejectCommand(),
			rebaseCommand(),
			cleanupCommand(),
			reconcileCommand(),
			gcCommand(),
			verifyCommand(),
			keysCommand(),
			waitCommand(),
			cancelCommand(),
			attachCommand(),
			collectCommand(),
			adoptCommand(),
			pushCommand(),
			fetchCommand(),
			hooksCommand(),
			hookCommand(),
			findingsCommand(),
			doctorCommand(),
			manCommand(),
		},
		ExitErrHandler:            func(*cli.Context, error) {},
		DisableSliceFlagSeparator: true,
		CommandNotFound: func(c *cli.Context, name string) {
			fmt.Fprintf(os.Stderr, "git-lease: '%s' is not a git lease command. See 'git lease --help'.\n", name)
			os.Exit(exitUsage)
		},
	}
}

// fail prints an error the way git does, on standard error. Errors quote
// agents' paths and output (a collection error, an agent's exit), so
// terminal controls in them are escaped; line breaks are kept, as some
// errors (a push's refusals) span lines.
func fail(err error) {
	fmt.Fprintf(os.Stderr, "git-lease: %s\n", escape.Text([]byte(err.Error())))
}
