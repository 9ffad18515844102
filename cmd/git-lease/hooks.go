package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/git-lease/git-lease/hooks"
)

func hooksCommand() *cli.Command {
	return &cli.Command{
		Name:  "hooks",
		Usage: "install git-lease's git hooks: a local guard, or a server's verification",
		Subcommands: []*cli.Command{{
			Name:  "install",
			Usage: "install the local guard of refs/leases, or with --server the verifying pre-receive hook",
			Description: `Without --server, install a reference-transaction hook that refuses any change
to refs/leases/* that git-lease did not make (git update-ref, a stray fetch
refspec). git-lease runs git with hooks off, so its own writes pass. This is a
guard against accidents, not a security boundary: anyone can run git with
hooks off too.

With --server, in a shared (usually bare) repository, install a pre-receive
hook that verifies every pushed lease log and its signed records against the
server's allowed signers (git config lease.allowedSignersFile) and refuses
deleting or rewriting a lease log, with the reason shown to the pusher. The
server must have this same git-lease.

The hooks run this git-lease binary by its absolute path; install again after
moving it. A hook already in place is kept as NAME.chained and runs first;
core.hooksPath is honoured. --uninstall removes git-lease's hook and puts back
the one it chained.

Example:
   git lease hooks install
   git config lease.allowedSignersFile /srv/git/allowed_signers && git lease hooks install --server`,
			Flags: []cli.Flag{
				&cli.BoolFlag{Name: "server", Usage: "install the pre-receive hook of a shared repository"},
				&cli.BoolFlag{Name: "uninstall", Usage: "remove git-lease's hook and restore the one it chained"},
			},
			Action: func(c *cli.Context) error {
				if c.NArg() != 0 {
					return usagef("hooks install takes no arguments")
				}
				return runHooksInstall(c)
			},
		}},
	}
}

func runHooksInstall(c *cli.Context) error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	loc, err := hooks.Locate(c.Context, wd)
	if err != nil {
		return err
	}
	server := c.Bool("server")
	if loc.Bare && !server {
		return usagef("this is a bare repository, where the local guard would refuse every pushed lease: install the server's hook with git lease hooks install --server")
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this git-lease binary for the hook to run: %w", err)
	}
	opts := hooks.Options{GitDir: loc.GitDir, HooksDir: loc.HooksDir, Server: server, Command: self}
	if c.Bool("uninstall") {
		if err := hooks.Uninstall(c.Context, opts); err != nil {
			return err
		}
		fmt.Printf("git-lease's hook is no longer in %s\n", loc.HooksDir)
		return nil
	}
	inst, err := hooks.Install(c.Context, opts)
	if err != nil {
		return err
	}
	switch {
	case !inst.Changed:
		fmt.Printf("already installed: %s\n", inst.Hook)
	default:
		fmt.Printf("installed %s\n", inst.Hook)
	}
	if inst.Chained != "" {
		fmt.Printf("the hook that was there is kept as %s and runs first\n", inst.Chained)
	}
	return nil
}
