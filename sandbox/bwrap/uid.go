package bwrap

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/git-lease/git-lease/sandbox"
)

// When git-lease runs as root (CI, dev containers, sudo), the agent must
// not be host uid 0: without any capability, uid 0 still writes
// host-global /proc/sys files and reads root's owner-only files. Each such
// lease gets a host uid (and gid) of its own from a range no distribution
// hands out: above systemd's container ranges and below its foreign range
// (0x7FFE0000), so it owns nothing on the host and leases differ from each
// other at the file-permission level too.
const (
	LeaseUIDBase  = 0x7F000000 // 2130706432
	LeaseUIDCount = 1 << 16
)

// uidClaims holds one file per claimed uid, naming the lease's runtime
// directory, so that leases of every repository on the host take different
// uids. /run is cleared at boot, when no lease runs.
var uidClaims = "/run/git-lease-uids"

// sandboxIDs are the host uid and gid the sandbox runs as: the caller's
// own, or, for root, the lease's claimed uid (as its gid too).
func sandboxIDs(spec sandbox.Spec) (uid, gid int, err error) {
	if os.Getuid() != 0 {
		return os.Getuid(), os.Getgid(), nil
	}
	uid, err = claimUID(spec)
	return uid, uid, err
}

// claimUID returns the lease's uid, claiming one on first use: the first
// free slot at or after the one its runtime directory hashes to. The uid is
// kept in that directory, so the call is idempotent.
func claimUID(spec sandbox.Spec) (int, error) {
	mine := filepath.Join(spec.Dir, "uid")
	if b, err := os.ReadFile(mine); err == nil {
		uid, err := strconv.Atoi(string(b))
		if err != nil || uid < LeaseUIDBase || uid >= LeaseUIDBase+LeaseUIDCount {
			return 0, fmt.Errorf("%w: the sandbox's uid file holds %q", sandbox.ErrUnavailable, b)
		}
		return uid, nil
	}
	if err := os.MkdirAll(uidClaims, 0o700); err != nil {
		return 0, fmt.Errorf("%w: claim a uid for the sandbox: %v", sandbox.ErrUnavailable, err)
	}
	start := firstSlot(spec.Dir)
	for i := uint32(0); i < LeaseUIDCount; i++ {
		uid := LeaseUIDBase + int((start+i)%LeaseUIDCount)
		// The lease's own record first: a claim whose lease directory does
		// not name its uid is stale.
		if err := os.WriteFile(mine, []byte(strconv.Itoa(uid)), 0o600); err != nil {
			return 0, err
		}
		claim := filepath.Join(uidClaims, strconv.Itoa(uid))
		f, err := os.OpenFile(claim, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) && staleClaim(claim, uid, spec.Dir) {
			// Its lease's directory is gone (removed without cleanup, as
			// a deleted repository's are), and nothing of its uid is left.
			os.Remove(claim)
			f, err = os.OpenFile(claim, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		}
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			os.Remove(mine)
			return 0, fmt.Errorf("%w: claim a uid for the sandbox: %v", sandbox.ErrUnavailable, err)
		}
		_, err = f.WriteString(spec.Dir)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(claim)
			os.Remove(mine)
			return 0, err
		}
		return uid, nil
	}
	os.Remove(mine)
	return 0, fmt.Errorf("%w: all %d sandbox uids are claimed (see %s)", sandbox.ErrUnavailable, LeaseUIDCount, uidClaims)
}

// firstSlot is where the search for dir's uid starts.
func firstSlot(dir string) uint32 {
	sum := sha256.Sum256([]byte(dir))
	return binary.BigEndian.Uint32(sum[:4]) % LeaseUIDCount
}

// staleClaim reports whether the claim on uid may be taken by the lease
// directory dir: it names dir itself (a claim left behind by dir's
// earlier lease), or a lease directory that no longer names uid (removed,
// or its claim moved on). A claim being written (empty) is not stale.
func staleClaim(claim string, uid int, dir string) bool {
	owner, err := os.ReadFile(claim)
	if err != nil || len(owner) == 0 {
		return false
	}
	if string(owner) == dir {
		return true
	}
	b, err := os.ReadFile(filepath.Join(string(owner), "uid"))
	return errors.Is(err, fs.ErrNotExist) || err == nil && string(b) != strconv.Itoa(uid)
}

// releaseUID gives the lease's uid back, before its runtime directory goes.
// Releasing twice is harmless.
func releaseUID(spec sandbox.Spec) error {
	b, err := os.ReadFile(filepath.Join(spec.Dir, "uid"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	uid, err := strconv.Atoi(string(b))
	if err != nil || uid < LeaseUIDBase || uid >= LeaseUIDBase+LeaseUIDCount {
		return nil // not a claim of ours: leave the claims alone
	}
	claim := filepath.Join(uidClaims, strconv.Itoa(uid))
	if owner, err := os.ReadFile(claim); err == nil && string(owner) == spec.Dir {
		return os.Remove(claim)
	}
	return nil
}

// IDs are the host uid and gid that the lease's sandbox runs as, claimed
// on first use (see sandboxIDs): a provider that serves the sandbox's /work
// (Served) makes its files theirs.
func IDs(spec sandbox.Spec) (uid, gid int, err error) { return sandboxIDs(spec) }
