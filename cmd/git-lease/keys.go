package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/git-lease/git-lease/verify"
)

func keysCommand() *cli.Command {
	return &cli.Command{
		Name:  "keys",
		Usage: "create or show the key that signs your leases",
		Description: `Everything git-lease writes is signed: every lease-log commit (an SSH commit
signature, as git writes with gpg.format=ssh) and the result, apply, reject and
cleanup records (DSSE envelopes of in-toto statements). The key is git-lease's
own ed25519 key in $XDG_CONFIG_HOME/git-lease/keys, else your git SSH signing
key (gpg.format=ssh and user.signingkey, through ssh-agent when only its public
half is given). Without either, the first lease creates git-lease's own key.

Example:
   git lease keys init
   git lease keys show`,
		Subcommands: []*cli.Command{
			{
				Name:  "init",
				Usage: "create git-lease's own signing key and print its allowed-signers line",
				Action: func(c *cli.Context) error {
					repo, err := openRepo()
					if err != nil {
						return err
					}
					line, err := verify.InitKey(gitlease.KeyDir(), gitlease.SignerEmail(repo))
					if err != nil {
						return err
					}
					fmt.Fprintf(os.Stderr, "git-lease: created %s; give teammates this allowed-signers line:\n", gitlease.KeyDir())
					fmt.Println(line)
					return nil
				},
			},
			{
				Name:  "show",
				Usage: "say which key signs, and print its allowed-signers line",
				Action: func(c *cli.Context) error {
					repo, err := openRepo()
					if err != nil {
						return err
					}
					s, err := gitlease.LoadSigner(repo)
					if errors.Is(err, verify.ErrNoSigningKey) {
						return fmt.Errorf("no signing key yet: run git lease keys init, or configure git's SSH signing (gpg.format=ssh, user.signingkey)")
					}
					if err != nil {
						return err
					}
					fmt.Fprintf(os.Stderr, "git-lease signs with %s\n", s)
					fmt.Println(s.AllowedSignersLine(gitlease.SignerEmail(repo)))
					return nil
				},
			},
		},
	}
}
