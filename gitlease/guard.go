package gitlease

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ErrLeaseRefGuarded is returned by GuardLeaseRefs for a transaction that
// would change a lease log.
var ErrLeaseRefGuarded = errors.New("lease logs are written only by git lease (this reference-transaction hook guards against accidents; it is not a security boundary)")

// refLine is one "<old> <new> <ref>" line that git gives the
// reference-transaction and pre-receive hooks.
type refLine struct {
	Old, New, Name string
}

// readRefLines reads a hook's input lines. Values are kept as given: a
// reference-transaction line may name a symbolic ref's target ("ref:…").
func readRefLines(r io.Reader) ([]refLine, error) {
	var lines []refLine
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if sc.Text() == "" {
			continue
		}
		f := strings.SplitN(sc.Text(), " ", 3)
		if len(f) != 3 {
			return nil, fmt.Errorf("hook input %q is not \"<old> <new> <ref>\"", sc.Text())
		}
		lines = append(lines, refLine{Old: f[0], New: f[1], Name: f[2]})
	}
	return lines, sc.Err()
}

// GuardLeaseRefs is the local reference-transaction hook: in state
// "prepared" it refuses, with ErrLeaseRefGuarded naming the refs, a
// transaction that changes any ref under refs/leases/. In the other states
// (committed, aborted) git ignores a hook's refusal, so it accepts. It is a
// guard against other tools and accidents (git update-ref, a stray fetch
// refspec), not a security boundary: git-lease runs git with hooks off,
// and so can anyone else. It reads only its input.
func GuardLeaseRefs(state string, input io.Reader) error {
	if state != "prepared" {
		return nil
	}
	lines, err := readRefLines(input)
	if err != nil {
		return err
	}
	var guarded []string
	for _, l := range lines {
		if strings.HasPrefix(l.Name, "refs/leases/") {
			guarded = append(guarded, l.Name)
		}
	}
	if len(guarded) > 0 {
		return fmt.Errorf("refusing to change %s: %w", strings.Join(guarded, ", "), ErrLeaseRefGuarded)
	}
	return nil
}
