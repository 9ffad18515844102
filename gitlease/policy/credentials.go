package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// SelectCredentials decides which credentials the lease receives: its
// agent preset's and those asked for with --credential, each of which the
// policy (trusted, with the preset's, narrowed by the .lease.toml) must
// allow. The policy records the names received.
func (e *Effective) SelectCredentials(asked []string) error {
	var given []string
	var sources []string
	if e.agent != nil && len(e.agent.Credentials) > 0 {
		for _, c := range e.agent.Credentials {
			if !slices.Contains(e.Credentials, c) {
				return fmt.Errorf("agent %s needs credential %s, but the policy allows only %q (%s)", e.agent.Name, c, e.Credentials, e.Sources["credentials"])
			}
		}
		given = slices.Clone(e.agent.Credentials)
		sources = append(sources, "agent "+e.agent.Name)
	}
	for _, c := range asked {
		if !slices.Contains(e.Credentials, c) {
			return fmt.Errorf("--credential %s: the policy allows only %q (%s): add it to credentials in your trusted policy", c, e.Credentials, e.Sources["credentials"])
		}
	}
	if len(asked) > 0 {
		given = union(given, asked)
		sources = append(sources, "--credential")
	}
	if len(given) == 0 && len(e.Credentials) == 0 {
		return nil
	}
	if len(given) == 0 {
		sources = []string{"none asked for"}
	}
	e.Credentials = given
	e.Sources["credentials"] = strings.Join(sources, " + ")
	return nil
}

// ExpandHome is path with a leading "~/" replaced by the user's home.
func ExpandHome(path string) string {
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		home, _ := os.UserHomeDir()
		return filepath.Join(home, rest)
	}
	return path
}
