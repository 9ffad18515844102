package gitlease

import (
	"context"
	"fmt"
)

// Reject records the decision not to apply a lease in review. The result,
// its branch and its log stay for history.
func Reject(ctx context.Context, x *Execution, reason string) error {
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
	return x.Move(ctx, Rejected, func(l *Lease) { l.Reason = reason }, nil)
}
