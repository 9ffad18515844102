package gitlease

import (
	"os"
	"strings"
)

// hostPaths are this machine's paths of the lease, its repository and the
// user's home, each with the placeholder that stands for it in records.
// At one place in a text the first that matches wins: the longest first.
func (x *Execution) hostPaths() [][2]string {
	home, _ := os.UserHomeDir()
	paths := [][2]string{
		{x.RunDir(), "<lease runtime>"},
		{x.Worktree(), "<review worktree>"},
		{x.Repo.LeaseDir(), "<git-lease runtime>"},
		{x.Repo.CommonDir, "<git dir>"}, // a linked worktree's git dir is in it
		{x.Repo.WorkTree, "<checkout>"},
		{home, "~"},
	}
	var out [][2]string
	for _, p := range paths {
		if len(p[0]) > 1 { // not unset, not "/"
			out = append(out, p)
		}
	}
	return out
}

// hostFree is s, an error or a detail about to go into the lease's record,
// with this machine's paths replaced by their placeholders: records are
// pushed to the team and hold no local paths, while errors from the file
// system name the file they are about ("open /home/u/repo/.git/lease/runs/
// <id>/sandbox/upper/x: …" becomes "open <lease runtime>/sandbox/upper/x: …").
func (x *Execution) hostFree(s string) string {
	var pairs []string
	for _, p := range x.hostPaths() {
		pairs = append(pairs, p[0], p[1])
	}
	return strings.NewReplacer(pairs...).Replace(s)
}

// Localize puts this clone's paths back in s, text from the lease's record,
// for the user of the clone the lease ran in to act on (a command in a
// cleanup receipt). Elsewhere, and for ~ (the shell's), s stays as recorded.
func (x *Execution) Localize(s string) string {
	if x.StartedElsewhere() {
		return s
	}
	var pairs []string
	for _, p := range x.hostPaths() {
		if p[1] != "~" {
			pairs = append(pairs, p[1], p[0])
		}
	}
	return strings.NewReplacer(pairs...).Replace(s)
}
