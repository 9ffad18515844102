package gitlease

import (
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/gitlease/policy"
	"github.com/git-lease/git-lease/sandbox"
	"github.com/git-lease/git-lease/verify"
)

// RuleCredential is a result that holds the value of one of its lease's
// credentials. It is stable: records store it.
const RuleCredential = "credential"

// credentialLeaks looks for the values of the lease's credentials in its
// delta, before anything of it is stored: in every path and symlink target
// and, with contents, in every file. An agent may write its key into its work by accident (a config
// file, a test fixture), and the review branch and the lease log are
// pushed to the team. A result that holds one is quarantined with nothing
// of it in the log but its redacted listing. (An agent that means to leak
// its key can encode it: the key is its lease's to use.) The values are
// read from the host again; if they cannot be, the result is quarantined
// too, since it cannot be shown to be free of them. It returns the values,
// for redacting what the log keeps.
func (x *Execution) credentialLeaks(d sandbox.Delta, entries []sandbox.Entry, contents bool) ([]verify.Finding, redactor, error) {
	if len(x.Lease.Credentials) == 0 {
		return nil, nil, nil
	}
	trusted, err := policy.LoadForAgent(x.Repo, plumbing.ZeroHash, x.Lease.AgentPreset)
	var creds []credential
	if err == nil {
		creds, err = x.readCredentials(trusted)
	}
	if err != nil {
		return []verify.Finding{{Rule: RuleCredential, Path: ".", Severity: verify.SeverityHigh,
			Detail: "the lease's credentials could not be read again to look for them in the result: " + x.hostFree(err.Error())}}, nil, nil
	}
	secrets := redactor(creds)
	var out []verify.Finding
	for _, e := range entries {
		name, err := secrets.foundIn(strings.NewReader(e.Path))
		if name == "" && e.Kind == sandbox.Symlink {
			name, err = secrets.foundIn(strings.NewReader(e.Target))
		}
		if name == "" && e.Kind == sandbox.File && contents {
			f, openErr := sandbox.OpenEntry(d, e)
			if openErr != nil {
				return nil, nil, openErr
			}
			name, err = secrets.foundIn(f)
			f.Close()
		}
		if err != nil {
			return nil, nil, err
		}
		if name != "" {
			out = append(out, verify.Finding{Rule: RuleCredential, Path: secrets.string(e.Path), Severity: verify.SeverityCritical,
				Detail: "holds the value of credential " + name})
		}
	}
	return out, secrets, nil
}
