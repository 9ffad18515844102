package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// permute moves a command's flags in front of its positional arguments, so
// that `git lease show ID --json` works as in git, where flags may follow
// arguments. urfave/cli stops parsing flags at the first positional one.
// Everything from "--" on is left exactly as given.
func permute(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	cmd := app.Command(args[1])
	if cmd == nil {
		return args
	}
	takesValue := map[string]bool{}
	for _, f := range cmd.Flags {
		_, isBool := f.(*cli.BoolFlag)
		for _, name := range f.Names() {
			takesValue[name] = !isBool
		}
	}
	var flags, positional []string
	rest := args[2:]
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
	out := append([]string{args[0], args[1]}, flags...)
	return append(out, positional...)
}
