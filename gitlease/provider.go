package gitlease

import "github.com/git-lease/git-lease/sandbox"

// sandboxIdentity is the ID that the lease's provider receipt binds for
// its sandbox: the provider's own (sandbox.Identifier, such as a Crabbox
// box ID), with own true, else lease-<id>, as bwrap and worktree sandboxes
// are named by the lease alone. The runner records it with the move to
// running, before the agent is released.
func sandboxIdentity(p sandbox.Provider, spec sandbox.Spec) (id string, own bool, err error) {
	idp, ok := p.(sandbox.Identifier)
	if !ok {
		return "lease-" + spec.ID, false, nil
	}
	id, err = idp.Identity(spec)
	return id, err == nil, err
}
