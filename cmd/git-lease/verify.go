package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/git-lease/git-lease/gitlease/escape"
)

var errNotVerified = errors.New("verification failed")

func verifyCommand() *cli.Command {
	return &cli.Command{
		Name:      "verify",
		Usage:     "check a lease's log, signatures and evidence offline",
		ArgsUsage: "[ID | --all]",
		Description: `Verify checks, from the repository alone: that the log is one chain of legal
transitions, every log commit signed by an allowed key; that every signed record
(result, apply, reject, cleanup) verifies against the allowed signers and names
exactly the objects and refs the record holds; that the result tree is the base
plus the manifest and the patch has its digest; and that the review branch is
where the state says. Allowed signers: --allowed-signers, else git config
lease.allowedSignersFile, else gpg.ssh.allowedSignersFile; your own key is
always allowed. Exit 1 when anything fails, naming what and where.

Example:
   git lease verify --all --allowed-signers team_signers`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "all", Usage: "verify every lease"},
			&cli.StringFlag{Name: "allowed-signers", Usage: "an allowed-signers file (git's gpg.ssh.allowedSignersFile format)"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			if c.Bool("all") == (c.NArg() == 1) || c.NArg() > 1 {
				return usagef("verify needs one lease ID or --all")
			}
			repo, err := openRepo()
			if err != nil {
				return err
			}
			allowed, err := gitlease.AllowedSigners(repo, c.String("allowed-signers"), true)
			if err != nil {
				return err
			}
			var leases []*gitlease.Execution
			var broken []gitlease.Broken
			if c.Bool("all") {
				if leases, broken, err = gitlease.ListAll(repo); err != nil {
					return err
				}
			} else {
				x, err := gitlease.LoadPrefix(repo, c.Args().First())
				if err != nil {
					return err
				}
				leases = append(leases, x)
			}
			var reports []*gitlease.VerifyReport
			// A log it cannot read does not verify, and does not stop
			// the others from being verified.
			ok := len(broken) == 0
			for _, b := range broken {
				reports = append(reports, &gitlease.VerifyReport{ID: b.ID, Problems: []string{"unreadable: " + b.Reason}})
				if !c.Bool("json") {
					fmt.Printf("lease %s: FAILED\n  unreadable: %s\n", b.ID, escape.Line(b.Reason))
				}
			}
			for _, x := range leases {
				rep := gitlease.Verify(c.Context, x, allowed)
				reports = append(reports, rep)
				ok = ok && rep.OK
				if c.Bool("json") {
					continue
				}
				if rep.OK {
					fmt.Printf("lease %s: ok (%d log entries, signed by %s)\n", rep.ID, rep.Entries, strings.Join(rep.Signers, ", "))
					continue
				}
				fmt.Printf("lease %s: FAILED\n", rep.ID)
				for _, p := range rep.Problems {
					fmt.Printf("  %s\n", escape.Line(p))
				}
			}
			if c.Bool("json") {
				printJSON(os.Stdout, reports)
			}
			if !ok {
				return errNotVerified
			}
			return nil
		},
	}
}
