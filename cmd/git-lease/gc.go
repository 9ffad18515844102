package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/git-lease/git-lease/gitlease/escape"
	"github.com/git-lease/git-lease/refs"
)

func gcCommand() *cli.Command {
	return &cli.Command{
		Name:  "gc",
		Usage: "prune cleaned-up leases older than an age",
		Description: `Gc deletes the log and review branch of every decided lease (rejected,
quarantined, failed, canceled) whose cleanup is confirmed and whose last event
is older than --older-than (default: git config lease.gcAge, else 30d). Leases
in review are kept, and counted when older; with --review-older-than (default:
git config lease.gcReviewAge, else none) a lease of this clone left in review
longer is rejected as stale and cleaned up (a review worktree with edits is
kept), for a later gc to prune. Applied leases are kept unless --applied is given. A lease
whose review worktree is still on disk (cleanup kept it for edits it did not
record) is kept and listed with the reason; --force prunes it anyway, noting
its log, branch and worktree in .git/lease/removed.jsonl (the files stay).
--dry-run prints what it would do. --broken removes instead the logs (and
review branches) of leases git-lease cannot read, as git lease doctor lists
them, noting each log's commit in .git/lease/removed.jsonl first.

Gc also evicts the exported bases (the files sandboxed leases start from,
kept for later leases) that no lease uses: those unused for longer than
trusted policy's bases.max_age (default 7d), then the oldest while all take
more than bases.max_bytes (default 20GiB), and says what each freed, and the
cache layers no lease uses: those a newer git lease cache warm or cache rm
replaced, then by cache_layers.max_age (default 30d) and
cache_layers.max_bytes (default 20GiB) as for bases. It removes the sandbox of
a git lease cache warm that died (never one whose process runs).

Example:
   git lease gc --older-than 7d --dry-run`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "older-than", Usage: "an age like 30d, 12h or 90m"},
			&cli.BoolFlag{Name: "applied", Usage: "prune applied leases too"},
			&cli.StringFlag{Name: "review-older-than", Usage: "reject and clean up leases left in review longer than this age"},
			&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "print what would be pruned"},
			&cli.BoolFlag{Name: "force", Usage: "prune leases whose review worktree holds kept edits too (noted in .git/lease/removed.jsonl)"},
			&cli.BoolFlag{Name: "broken", Usage: "only remove the lease logs git-lease cannot read (see git lease doctor)"},
		},
		Action: func(c *cli.Context) error {
			repo, err := openRepo()
			if err != nil {
				return err
			}
			if c.Bool("broken") {
				done, err := gitlease.RemoveBroken(c.Context, repo, c.Bool("dry-run"))
				for _, line := range done {
					fmt.Println(escape.Line(line))
				}
				if len(done) == 0 && err == nil {
					fmt.Println("no broken leases")
				}
				return err
			}
			age := c.String("older-than")
			if age == "" {
				age = gcAgeConfig(repo)
			}
			d, err := parseAge(age)
			if err != nil {
				return usagef("--older-than %s: %v", age, err)
			}
			opts := gitlease.GCOptions{OlderThan: d, Applied: c.Bool("applied"), DryRun: c.Bool("dry-run"), Force: c.Bool("force")}
			if age := c.String("review-older-than"); age != "" || repo.Config("lease.gcReviewAge") != "" {
				if age == "" {
					age = repo.Config("lease.gcReviewAge")
				}
				if opts.ReviewOlderThan, err = parseAge(age); err != nil {
					return usagef("--review-older-than %s: %v", age, err)
				}
				opts.RetireReview = true
			}
			done, err := gitlease.GC(c.Context, repo, opts)
			if err == nil {
				var freed []string
				freed, err = gitlease.EvictBases(repo, c.Bool("dry-run"))
				done = append(done, freed...)
			}
			if err == nil {
				var freed []string
				freed, err = gitlease.EvictCaches(c.Context, repo, c.Bool("dry-run"))
				done = append(done, freed...)
			}
			for _, line := range done {
				fmt.Println(line)
			}
			if len(done) == 0 && err == nil {
				fmt.Println("nothing to prune")
			}
			return err
		},
	}
}

func gcAgeConfig(repo *refs.Repo) string {
	if age := repo.Config("lease.gcAge"); age != "" {
		return age
	}
	return "30d"
}

// parseAge reads Go durations plus a days suffix ("30d").
func parseAge(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("not a number of days")
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}
