package main

import (
	"errors"
	"fmt"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/git-lease/git-lease/refs"
	"github.com/urfave/cli/v2"
)

// Exit codes, documented in the README.
const (
	exitOK       = 0
	exitFailed   = 1 // the operation failed, or the lease ended failed, quarantined or canceled
	exitUsage    = 2 // bad flags or arguments
	exitConflict = 3 // a ref moved under us: read again and retry
	exitTimeout  = 4 // wait --timeout passed; the lease goes on
)

// errLeaseFailed is returned by commands whose lease ended badly, after the
// lease itself was printed.
var errLeaseFailed = errors.New("lease did not reach review")

// usageError marks errors in how the command was called.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// exitCode maps an error to the process exit code, printing it first.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	if errors.Is(err, errLeaseFailed) {
		return exitFailed
	}
	var ue usageError
	var ce cli.ExitCoder
	switch {
	case errors.As(err, &ue):
		fail(err)
		return exitUsage
	case errors.As(err, &ce):
		if err.Error() != "" {
			fail(err)
		}
		return ce.ExitCode()
	case errors.Is(err, refs.ErrStale), errors.Is(err, gitlease.ErrTargetMoved), errors.Is(err, gitlease.ErrConflict), errors.Is(err, gitlease.ErrBusy):
		fail(err)
		return exitConflict
	}
	fail(err)
	return exitFailed
}
