package crabbox

import (
	"fmt"
	"os"
	"strings"

	"github.com/git-lease/git-lease/sandbox"
)

// prepare makes the lease's directory and its Crabbox state directory, and
// writes the lease's whole Crabbox config. With CRABBOX_CONFIG set, Crabbox
// reads that one file and neither the user's config nor the repository's
// crabbox.yaml/.crabbox.yaml (flags and CRABBOX_* environment variables
// still apply, and git-lease passes --provider on every command). The file
// lives outside the seed repository, so Crabbox classifies it as trusted
// operator config, and is 0600, as `crabbox doctor` requires. Preparing
// again rewrites the same file.
func (p Provider) prepare(spec sandbox.Spec) error {
	l := layout(spec)
	for _, dir := range []string{spec.Dir, l.state} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	return writeFile(l.config, []byte(p.config(spec)), 0o600)
}

// config is the YAML text of the lease's Crabbox config: the provider and
// the box's lifetime (keys provider, lease.ttl and lease.idleTimeout, as
// Crabbox's config loader reads them; durations in Go syntax).
func (p Provider) config(spec sandbox.Spec) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by git-lease for lease %s; Crabbox reads only this file (CRABBOX_CONFIG).\n", spec.ID)
	fmt.Fprintf(&b, "provider: %s\n", p.CrabboxProvider)
	if p.TTL > 0 || p.IdleTimeout > 0 {
		b.WriteString("lease:\n")
	}
	if p.TTL > 0 {
		fmt.Fprintf(&b, "  ttl: %s\n", p.TTL)
	}
	if p.IdleTimeout > 0 {
		fmt.Fprintf(&b, "  idleTimeout: %s\n", p.IdleTimeout)
	}
	return b.String()
}

// lifetimeFlags repeats the lifetime on warmup's command line, where it is
// part of a fixed lease ID's create intent.
func (p Provider) lifetimeFlags() []string {
	var flags []string
	if p.TTL > 0 {
		flags = append(flags, "--ttl", p.TTL.String())
	}
	if p.IdleTimeout > 0 {
		flags = append(flags, "--idle-timeout", p.IdleTimeout.String())
	}
	return flags
}

// writeFile replaces path atomically with data.
func writeFile(path string, data []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return err
	}
	if err := os.Chmod(tmp, perm); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
