// Command git-lease runs coding agents in disposable leases and hands their
// work back as reviewable, verified results. Installed on PATH it is also
// `git lease`. This package is only the command-line surface: each command
// parses its flags into an options struct and calls a run function.
package main

import (
	"fmt"
	"os"
	"regexp"
	"slices"

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
	app := &cli.App{
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
			cacheCommand(),
			verifyCommand(),
			keysCommand(),
			waitCommand(),
			cancelCommand(),
			revokeCommand(),
			unrevokeCommand(),
			attachCommand(),
			collectCommand(),
			adoptCommand(),
			importCommand(),
			pushCommand(),
			fetchCommand(),
			hooksCommand(),
			hookCommand(),
			findingsCommand(),
			doctorCommand(),
			gateCommand(),
			manCommand(),
		},
		ExitErrHandler:            func(*cli.Context, error) {},
		DisableSliceFlagSeparator: true,
		CommandNotFound: func(c *cli.Context, name string) {
			fmt.Fprintf(os.Stderr, "git-lease: '%s' is not a git lease command. See 'git lease --help'.\n", name)
			os.Exit(exitUsage)
		},
	}
	app.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
		return usageError{err.Error() + "\nusage: git lease COMMAND [options] (git lease --help for more)"}
	}
	shortUsageErrors(app.Commands, "git lease")
	return app
}

// shortUsageErrors makes a flag mistake print one line and the command's
// usage line, as git does, instead of the whole help page.
func shortUsageErrors(cmds []*cli.Command, parent string) {
	for _, cmd := range cmds {
		name := parent + " " + cmd.Name
		usage := "usage: " + name + " [options]"
		if cmd.ArgsUsage != "" {
			usage += " " + cmd.ArgsUsage
		}
		flags := cmd.Flags
		cmd.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
			return usageError{flagMistake(err, flags) + "\n" + usage + " (" + name + " --help for more)"}
		}
		shortUsageErrors(cmd.Subcommands, name)
	}
}

// flagValue finds the flag named in the flag package's "invalid value"
// errors.
var flagValue = regexp.MustCompile(`^invalid value "(.*)" for flag -([a-z-]+): `)

// flagMistake says what was wrong with a flag; for a duration, what one
// looks like.
func flagMistake(err error, flags []cli.Flag) string {
	m := flagValue.FindStringSubmatch(err.Error())
	if m == nil {
		return err.Error()
	}
	for _, f := range flags {
		if _, ok := f.(*cli.DurationFlag); ok && slices.Contains(f.Names(), m[2]) {
			return fmt.Sprintf("invalid value %q for --%s: a duration with a unit, such as 90s, 10m or 2h", m[1], m[2])
		}
	}
	return err.Error()
}

// fail prints an error the way git does, on standard error. Errors quote
// agents' paths and output (a collection error, an agent's exit), so
// terminal controls in them are escaped; line breaks are kept, as some
// errors (a push's refusals) span lines.
func fail(err error) {
	fmt.Fprintf(os.Stderr, "git-lease: %s\n", escape.Text([]byte(err.Error())))
}
