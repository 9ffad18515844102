package gitlease

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/git-lease/git-lease/refs"
)

// Shareable splits leases into those git lease push sends and those it
// withholds: a trusted_local lease ran unsandboxed, as its owner, in the
// owner's environment, so it stays local unless git config
// lease.shareTrustedLocal is true. A value git does not read as a boolean
// is an error.
func Shareable(ctx context.Context, repo *refs.Repo, leases []*Execution) (share, withheld []*Execution, err error) {
	out, err := repo.Git(ctx, nil, "config", "--type=bool", "--get", "lease.shareTrustedLocal")
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) { // 1: unset
		return nil, nil, fmt.Errorf("lease.shareTrustedLocal: %w (set it to true or false)", err)
	}
	shareTrusted := strings.TrimSpace(string(out)) == "true"
	for _, x := range leases {
		if x.Lease.Mode == TrustedLocal && !shareTrusted {
			withheld = append(withheld, x)
		} else {
			share = append(share, x)
		}
	}
	return share, withheld, nil
}
