package gitlease

import (
	"context"
	"fmt"
	"os"

	"github.com/git-lease/git-lease/verify"
)

// Reject records the decision not to apply a lease in review. The result,
// its branch and its log stay for history.
func Reject(ctx context.Context, x *Execution, reason string) error {
	if _, err := Signing(x.Repo, os.Stderr); err != nil {
		return err
	}
	unlock, err := x.Lock()
	if err != nil {
		return err
	}
	defer unlock()
	if x.Lease.State != Review {
		return fmt.Errorf("lease %s is %s: only a lease in review can be rejected", x.Lease.ID, x.Lease.State)
	}
	if reason == "" {
		reason = "rejected by the reviewer"
	}
	env, err := x.sign(verify.PredicateReject, rejectPredicate{x.Lease.ID, reason}, commitSubject("result", x.Lease.Result.Commit))
	if err != nil {
		return err
	}
	return x.Move(ctx, Rejected, func(l *Lease) { l.Reason = reason }, map[string][]byte{rejectReceipt: env})
}
