package main

import (
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/git-lease/git-lease/gitlease"
)

func agentsCommand() *cli.Command {
	return &cli.Command{
		Name:      "agents",
		Usage:     "list the agent presets and whether each agent is installed",
		ArgsUsage: "[NAME…]",
		Description: `Agents lists the presets git lease start --agent NAME runs: the built-in ones
(claude, codex, gemini, opencode, aider) and those of your trusted policy
([agents.NAME], which replace a built-in one of the same name). For each it
shows where a sandboxed lease finds the agent (on /usr/local/bin:/usr/bin:/bin,
or in the preset's read_only paths), the destinations and credentials it gets,
and its Herdr agent kind. --json adds the command and environment. Names
show only those presets.

Example:
   git lease agents
   git lease agents claude --json
   git lease start --agent claude --prompt 'fix the failing test'`,
		Flags: []cli.Flag{jsonFlag},
		Action: func(c *cli.Context) error {
			repo, err := openRepo()
			if err != nil {
				return err
			}
			list, err := gitlease.Agents(repo, c.Args().Slice()...)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(os.Stdout, list)
			}
			w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tSOURCE\tINSTALLED\tNETWORK\tCREDENTIALS\tHERDR")
			for _, a := range list {
				installed := a.Installed
				if installed == "" {
					installed = "no"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", a.Name, a.Source, installed,
					orDash(strings.Join(a.Network, ",")), orDash(strings.Join(a.Credentials, ",")), orDash(a.HerdrAgent))
			}
			if err := w.Flush(); err != nil {
				return err
			}
			for _, a := range list {
				if a.Missing != "" {
					fmt.Fprintf(os.Stderr, "git-lease: %s: %s\n", a.Name, a.Missing)
				}
			}
			return nil
		},
	}
}

// orDash is s, or "-" for nothing.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
