package gitlease

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/git-lease/git-lease/refs"
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
// transaction that changes where any ref under refs/leases/ points. git
// pack-refs (and so git gc) passes: it writes each ref into packed-refs at
// the value it has and then removes loose copies that packed-refs now
// holds at the same value, which changes nothing a reader sees. In the
// other states (committed, aborted) git ignores a refusal, so it accepts.
// open opens the repository, and is called only for input that names a
// lease log. It is a guard against other tools and accidents (git
// update-ref, a stray fetch refspec), not a security boundary: git-lease
// runs git with hooks off, and so can anyone else. It writes nothing.
func GuardLeaseRefs(state string, input io.Reader, open func() (*refs.Repo, error)) error {
	if state != "prepared" {
		return nil
	}
	lines, err := readRefLines(input)
	if err != nil {
		return err
	}
	var repo *refs.Repo
	var guarded []string
	for _, l := range lines {
		if !strings.HasPrefix(l.Name, "refs/leases/") {
			continue
		}
		if repo == nil {
			if repo, err = open(); err != nil {
				return err
			}
		}
		same, err := unchanged(repo, l)
		if err != nil {
			return err
		}
		if !same {
			guarded = append(guarded, l.Name)
		}
	}
	if len(guarded) > 0 {
		return fmt.Errorf("refusing to change %s: %w", strings.Join(guarded, ", "), ErrLeaseRefGuarded)
	}
	return nil
}

// unchanged reports whether a transaction line leaves its ref where readers
// see it: an update to the value the ref already has, or the removal of a
// loose ref that packed-refs holds at the same value (old given). A real
// deletion also deletes the packed copy, in a line without an old value,
// so it is a change.
func unchanged(repo *refs.Repo, l refLine) (bool, error) {
	oldOID, okOld := parseOID(l.Old)
	newOID, okNew := parseOID(l.New)
	switch {
	case !okOld || !okNew:
		return false, nil
	case !newOID.IsZero():
		cur, err := repo.Ref(l.Name)
		return cur == newOID, err
	case oldOID.IsZero():
		return false, nil
	}
	packed, err := repo.PackedRef(l.Name)
	return packed == oldOID, err
}
