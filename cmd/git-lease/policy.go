package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/git-lease/git-lease/gitlease/policy"
)

func policyCommand() *cli.Command {
	return &cli.Command{
		Name:  "policy",
		Usage: "print the effective policy and where each setting comes from",
		Description: `Policy prints what a lease started now would be allowed: built-in defaults,
overridden by your trusted policy file (git config lease.policy, else
$XDG_CONFIG_HOME/git-lease/policy.toml), narrowed by the .lease.toml of the
base commit (never the working tree). A .lease.toml that asks for more than
the trusted policy allows is an error naming the key and both values.

Example:
   git lease policy --base main --json`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "base", Value: "HEAD", Usage: "the commit whose .lease.toml applies"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			repo, err := openRepo()
			if err != nil {
				return err
			}
			base, err := repo.ResolveCommit(c.String("base"))
			if err != nil {
				return err
			}
			eff, err := policy.Load(repo, base)
			if err != nil {
				return err
			}
			path, _ := policy.TrustedPath(repo)
			if c.Bool("json") {
				return printJSON(os.Stdout, struct {
					*policy.Effective
					TrustedFile string `json:"trusted_file"`
					Digest      string `json:"digest"`
				}{eff, path, eff.Digest()})
			}
			return printPolicy(eff, path)
		},
	}
}

// printPolicy prints the trusted file's path, then one line per setting:
// key, source, value; each declared cache's paths and warm-up command too
// (a [caches.NAME] table is no key of its own).
func printPolicy(eff *policy.Effective, trustedPath string) error {
	b, _ := json.Marshal(eff.Policy)
	var tree map[string]any
	json.Unmarshal(b, &tree)
	fmt.Printf("trusted policy file: %s\n", trustedPath)
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	for _, key := range policy.Keys() {
		var v any = tree
		for _, part := range strings.Split(key, ".") {
			v = v.(map[string]any)[part]
		}
		value, _ := json.Marshal(v)
		fmt.Fprintf(w, "%s\t%s\t%s\n", key, eff.Sources[key], value)
	}
	for _, name := range slices.Sorted(maps.Keys(eff.Caches)) {
		paths, _ := json.Marshal(eff.Caches[name].Paths)
		warm, _ := json.Marshal(eff.Caches[name].Warm)
		fmt.Fprintf(w, "caches.%s.paths\t%s\t%s\n", name, eff.Sources["caches"], paths)
		fmt.Fprintf(w, "caches.%s.warm\t%s\t%s\n", name, eff.Sources["caches"], warm)
	}
	fmt.Fprintf(w, "digest\t\t%s\n", eff.Digest())
	return w.Flush()
}
