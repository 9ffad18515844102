package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// permute moves a command's flags in front of its positional arguments, so
// that `git lease show ID --json` works as in git, where flags may follow
// arguments. urfave/cli stops parsing flags at the first positional one.
// Everything from "--" on is left exactly as given. A subcommand's flags
// (hooks install --server) move to just after the subcommand.
func permute(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	cmd := app.Command(args[1])
	if cmd == nil {
		return args
	}
	head, rest := args[:2], args[2:]
	for len(rest) > 0 && subcommand(cmd, rest[0]) != nil { // hooks install --server
		cmd, head, rest = subcommand(cmd, rest[0]), args[:len(head)+1], rest[1:]
	}
	takesValue := map[string]bool{}
	for _, f := range cmd.Flags {
		_, isBool := f.(*cli.BoolFlag)
		for _, name := range f.Names() {
			takesValue[name] = !isBool
		}
	}
	var flags, positional []string
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			positional = append(positional, rest[i:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			positional = append(positional, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if !strings.Contains(name, "=") && takesValue[name] && i+1 < len(rest) {
			i++
			flags = append(flags, rest[i])
		}
	}
	out := append(append([]string{}, head...), flags...)
	return append(out, positional...)
}

// subcommand returns cmd's subcommand called name, or nil.
func subcommand(cmd *cli.Command, name string) *cli.Command {
	for _, sub := range cmd.Subcommands {
		if sub.HasName(name) {
			return sub
		}
	}
	return nil
}
