package main

import (
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/git-lease/git-lease/gitlease/escape"
	"github.com/git-lease/git-lease/sandbox/bwrap"
)

func cacheCommand() *cli.Command {
	return &cli.Command{
		Name:  "cache",
		Usage: "warm, list and remove the build and package caches that leases share",
		Description: `Trusted policy declares each cache: where its directories appear in the
sandbox, the variables that name them, and the command that fills them.

   [caches.go]
   paths = ["GOCACHE:/cache/go-build", "GOMODCACHE:/cache/gomod"]
   warm = "go build ./... && go test -run XXX ./..."

git lease cache warm runs the warm-up command in a sandbox on the base (with
trusted policy's limits and network: module downloads need an allowed
destination) and keeps what it wrote under the cache's directories, not the
tree, as the cache's new read-only layer. Every bwrap lease then sees the
current layer of each cache at /cache through an overlay whose writes are its
own (on its disk bound): no agent changes what another lease reads, and none of
it is part of a result. Only warm makes a layer.

Example:
   git lease cache warm --base main go
   git lease cache ls
   git lease cache rm go`,
		Subcommands: []*cli.Command{
			{
				Name:      "warm",
				Usage:     "fill a cache (every declared one by default) by its warm-up command on a base",
				ArgsUsage: "[NAME…]",
				Flags:     []cli.Flag{&cli.StringFlag{Name: "base", Value: "HEAD", Usage: "the commit to warm on"}},
				Action: func(c *cli.Context) error {
					repo, err := openRepo()
					if err != nil {
						return err
					}
					base, err := repo.ResolveCommit(c.String("base"))
					if err != nil {
						return usagef("--base %s: %v", c.String("base"), err)
					}
					_, err = gitlease.WarmCache(c.Context, repo, base, c.Args().Slice(), os.Stderr)
					return err
				},
			},
			{
				Name:  "ls",
				Usage: "list the cache layers: size, age, the base each was warmed on",
				Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print JSON"}},
				Action: func(c *cli.Context) error {
					repo, err := openRepo()
					if err != nil {
						return err
					}
					infos, err := gitlease.ListCaches(repo)
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(os.Stdout, infos)
					}
					if len(infos) == 0 {
						fmt.Println("no caches (git lease cache warm fills the ones trusted policy declares)")
						return nil
					}
					w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
					fmt.Fprintln(w, "CACHE\tLAYER\tSIZE\tAGE\tBASE\tSTATE")
					for _, i := range infos {
						state := "current"
						if i.Superseded {
							state = "superseded"
						}
						if i.Users > 0 {
							state += fmt.Sprintf(", %d lease(s)", i.Users)
						}
						base := i.Base
						if len(base) > 12 {
							base = base[:12]
						}
						fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", i.Name, i.Layer, bwrap.HumanBytes(i.Bytes), time.Since(i.WarmedAt).Round(time.Second), base, state)
					}
					return w.Flush()
				},
			},
			{
				Name:      "rm",
				Usage:     "remove a cache: no new lease gets it, its unused layers go now",
				ArgsUsage: "NAME",
				Flags:     []cli.Flag{&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "print what would be removed"}},
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return usagef("git lease cache rm takes one cache name")
					}
					repo, err := openRepo()
					if err != nil {
						return err
					}
					done, err := gitlease.RemoveCache(repo, c.Args().First(), c.Bool("dry-run"))
					for _, line := range done {
						fmt.Println(escape.Line(line))
					}
					return err
				},
			},
		},
	}
}
