package gitlease

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/git-lease/git-lease/gitlease/policy"
	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/sandbox"
	"github.com/git-lease/git-lease/sandbox/herdr"
)

// GateVersion is the version of the gate record's format.
const GateVersion = 1

// GateRefPrefix is where a repository keeps the gate records of the
// setups its leases ran on: refs/lease-gates/<provider>/<supervisor>, a
// chain of signed commits whose tree holds gate.json.
const GateRefPrefix = "refs/lease-gates/"

// GateFixtureEnv names the gate's own fixture repository (its git common
// directory) to the git-lease processes the gate runs there: their
// sandboxed starts are the gate's spike, not starts it must gate.
const GateFixtureEnv = "GIT_LEASE_GATE_FIXTURE"

// GateSetup is what a gate record is for: one provider and supervisor, at
// their versions, on one kernel, run by one build of git-lease. A record
// gates a start only when all of it matches what the start would use.
type GateSetup struct {
	Provider          string `json:"provider"`
	ProviderVersion   string `json:"provider_version"`
	Supervisor        string `json:"supervisor"`
	SupervisorVersion string `json:"supervisor_version"`
	Kernel            string `json:"kernel"`
	GitLease          string `json:"git_lease"`
	// GitLeaseDigest is the sha256 of the git-lease executable: a rebuilt
	// development binary has the same version and needs its own gate.
	GitLeaseDigest string `json:"git_lease_digest"`
}

// GatePoint is one point of the feasibility gate with its one line of
// evidence (or what failed).
type GatePoint struct {
	Name     string `json:"name"`
	Passed   bool   `json:"passed"`
	Evidence string `json:"evidence"`
}

// GateRecord is the outcome of one git lease gate run.
type GateRecord struct {
	Version int `json:"version"`
	GateSetup
	Session    string      `json:"session"`
	Passed     bool        `json:"passed"`
	StartedAt  time.Time   `json:"started_at"`
	FinishedAt time.Time   `json:"finished_at"`
	Points     []GatePoint `json:"points"`
}

// GateRef is the ref of a setup's gate records.
func GateRef(provider, supervisor string) string {
	return GateRefPrefix + provider + "/" + supervisor
}

// gateStoreDir is where this user keeps the gate records of this machine
// ($XDG_STATE_HOME/git-lease/gate, else ~/.local/state/git-lease/gate): the
// gate proves what the kernel, the provider and the supervisor do here, so
// its record is the user's and the machine's, as a start trusts it.
func gateStoreDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "git-lease", "gate"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no home directory for the gate's records: %w", err)
	}
	return filepath.Join(home, ".local", "state", "git-lease", "gate"), nil
}

func gateStorePath(provider, supervisor string) (string, error) {
	dir, err := gateStoreDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, provider+"-"+supervisor+".json"), nil
}

// currentSetup is the setup a start with provider and sup would use, built
// by git-lease version.
func currentSetup(ctx context.Context, provider string, sup sandbox.Supervisor, version string) (GateSetup, error) {
	s := GateSetup{Provider: provider, Supervisor: sup.Name(), GitLease: version}
	var err error
	if s.ProviderVersion, err = providerVersion(ctx, provider); err != nil {
		return s, err
	}
	if s.SupervisorVersion, err = supervisorVersion(ctx, sup, version); err != nil {
		return s, err
	}
	if s.Kernel, err = kernelRelease(); err != nil {
		return s, err
	}
	s.GitLeaseDigest, err = executableDigest()
	return s, err
}

func providerVersion(ctx context.Context, provider string) (string, error) {
	if provider != "bwrap" {
		return "", fmt.Errorf("the feasibility gate runs with bwrap only, not %s", provider)
	}
	out, err := exec.CommandContext(ctx, "bwrap", "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%w: bwrap --version: %v", sandbox.ErrUnavailable, err)
	}
	return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "bubblewrap")), nil
}

// supervisorVersion is Herdr's own version, or git-lease's for headless,
// whose runners git-lease supervises itself.
func supervisorVersion(ctx context.Context, sup sandbox.Supervisor, version string) (string, error) {
	h, ok := sup.(*herdr.Supervisor)
	if !ok {
		return version, nil
	}
	s, err := h.Client.Ping(ctx)
	if err != nil {
		return "", fmt.Errorf("%w: %v", sandbox.ErrUnavailable, err)
	}
	return s.Version, nil
}

func kernelRelease() (string, error) {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return "", err
	}
	b := make([]byte, 0, len(u.Release))
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b), nil
}

// executableDigest is the sha256 of the git-lease executable. Hashing it
// costs about 60 ms of CPU per start, so the digest is kept in this user's
// gate store under the file's identity and times: replacing or rewriting
// the file changes its inode or ctime, which no one can set back.
func executableDigest() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	f, err := os.Open(self)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return "", err
	}
	id := fmt.Sprintf("%d %d %d %d.%d %d.%d", st.Dev, st.Ino, st.Size, st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec)
	dir, err := gateStoreDir()
	if err != nil {
		return "", err
	}
	cache := filepath.Join(dir, "executable")
	if b, err := os.ReadFile(cache); err == nil {
		if known, digest, ok := strings.Cut(strings.TrimSpace(string(b)), "\n"); ok && known == id {
			return digest, nil
		}
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	digest := "sha256:" + hex.EncodeToString(h.Sum(nil))
	// A cache, renamed into place whole: failing to keep it costs a hash
	// next time.
	os.MkdirAll(dir, 0o700)
	if tmp, err := os.CreateTemp(dir, ".executable-*"); err == nil {
		_, err = tmp.WriteString(id + "\n" + digest + "\n")
		if tmp.Close() != nil || err != nil || os.Rename(tmp.Name(), cache) != nil {
			os.Remove(tmp.Name())
		}
	}
	return digest, nil
}

// readGateRecord reads this user's record for a provider and supervisor;
// none is (nil, nil).
func readGateRecord(provider, supervisor string) (*GateRecord, []byte, error) {
	path, err := gateStorePath(provider, supervisor)
	if err != nil {
		return nil, nil, err
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	r, err := parseGateRecord(b)
	if err != nil {
		return nil, nil, nil // an unreadable record is no record: the gate runs again
	}
	return r, b, nil
}

// gateFile is the file of a gate ref's tree.
const gateFile = "gate.json"

// parseGateRecord reads a stored gate record of this version.
func parseGateRecord(b []byte) (*GateRecord, error) {
	var r GateRecord
	if err := json.Unmarshal(b, &r); err != nil || r.Version != GateVersion {
		return nil, fmt.Errorf("%s is not a gate record of version %d: %v", gateFile, GateVersion, err)
	}
	return &r, nil
}

// encodeGateRecord is the record's stored bytes, the same in the user's
// store and in a repository.
func encodeGateRecord(r *GateRecord) []byte {
	b, _ := json.MarshalIndent(r, "", "  ")
	return append(b, '\n')
}

// storeGateRecord replaces this user's record for the record's setup (a
// new file renamed into place, so a reader never sees half of one).
func storeGateRecord(r *GateRecord) error {
	path, err := gateStorePath(r.Provider, r.Supervisor)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".gate-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(encodeGateRecord(r)); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// recordGate appends the record to the repository's gate ref as a signed
// commit, unless the ref's newest record is already this one. It is
// idempotent, and a concurrent writer of the same record is no error.
func recordGate(ctx context.Context, repo *refs.Repo, data []byte, r *GateRecord) error {
	if _, err := Signing(repo, os.Stderr); err != nil {
		return err
	}
	name := GateRef(r.Provider, r.Supervisor)
	blob, err := repo.WriteBlob(data)
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		tip, err := repo.Ref(name)
		if err != nil {
			return err
		}
		var parents []plumbing.Hash
		if !tip.IsZero() {
			c, err := repo.Commit(tip)
			if err != nil {
				return err
			}
			if f, err := c.File(gateFile); err == nil && f.Hash == blob {
				return nil
			}
			parents = []plumbing.Hash{tip}
		}
		tree, err := repo.WriteTree([]object.TreeEntry{{Name: gateFile, Mode: filemode.Regular, Hash: blob}})
		if err != nil {
			return err
		}
		outcome := "passed"
		if !r.Passed {
			outcome = "failed"
		}
		msg := refs.GateMessage(r.Provider, r.Supervisor, outcome, r.Kernel, r.GitLease)
		commit, err := repo.WriteCommit(tree, parents, msg)
		if err != nil {
			return err
		}
		err = repo.Update(ctx, msg, refs.RefUpdate{Name: name, Old: tip, New: commit})
		if err == nil || !errors.Is(err, refs.ErrStale) || attempt == 3 {
			return err
		}
	}
}

// GateCheck is how a sandboxed start is gated: Version is git-lease's;
// Progress receives the gate's progress when the start runs it.
type GateCheck struct {
	Version  string
	Progress io.Writer
}

// ErrNoGate is returned when no passing gate record matches a start's
// setup and trusted policy says gate = "require".
var ErrNoGate = errors.New("no passing feasibility gate for this setup")

// requireGate lets a sandboxed start go ahead only when this user's
// passing gate record matches its provider, supervisor, their versions,
// the kernel and this git-lease; it then records that record in the
// repository. Without one it runs the gate first, or with policy gate =
// "require" refuses with the command to run. A failed gate refuses the
// start: nothing falls back to another mode.
func requireGate(ctx context.Context, repo *refs.Repo, provider string, sup sandbox.Supervisor, eff *policy.Effective, check GateCheck) error {
	if fixture := os.Getenv(GateFixtureEnv); fixture != "" && fixture == repo.CommonDir {
		return nil
	}
	want, err := currentSetup(ctx, provider, sup, check.Version)
	if err != nil {
		return err
	}
	unlock, err := lockGateStore(want.Provider, want.Supervisor)
	if err != nil {
		return err
	}
	defer unlock()
	r, data, err := readGateRecord(want.Provider, want.Supervisor)
	if err != nil {
		return err
	}
	if r == nil || !r.Passed || r.GateSetup != want {
		run := fmt.Sprintf("git lease gate --provider %s --supervisor %s", want.Provider, want.Supervisor)
		if eff.Gate == "require" {
			return fmt.Errorf("%w (%s %s with %s %s, kernel %s, git-lease %s): run %s (trusted policy says gate = \"require\")",
				ErrNoGate, want.Provider, want.ProviderVersion, want.Supervisor, want.SupervisorVersion, want.Kernel, want.GitLease, run)
		}
		fmt.Fprintf(check.Progress, "git-lease: no passing feasibility gate for %s with %s on this machine yet: running %s first\n", want.Provider, want.Supervisor, run)
		if r, err = runGate(ctx, repo, want, check.Progress); err != nil {
			return err
		}
		data = encodeGateRecord(r)
		if !r.Passed {
			if err := recordGate(ctx, repo, data, r); err != nil {
				return err
			}
			return fmt.Errorf("the feasibility gate failed for %s with %s (see above): no sandboxed start until %s passes", want.Provider, want.Supervisor, run)
		}
	}
	return recordGate(ctx, repo, data, r)
}

// lockGateStore serializes this user's gate checks of one provider and
// supervisor, so that two starts that find no record run the gate once.
func lockGateStore(provider, supervisor string) (func(), error) {
	path, err := gateStorePath(provider, supervisor)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(strings.TrimSuffix(path, ".json")+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}
