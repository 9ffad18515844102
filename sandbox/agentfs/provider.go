package agentfs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	sdk "github.com/tursodatabase/agentfs/sdk/go"
	"golang.org/x/sys/unix"

	"github.com/git-lease/git-lease/sandbox"
	"github.com/git-lease/git-lease/sandbox/bwrap"
)

// Provider runs agents in bwrap's sandbox with /work served from an
// AgentFS database. Self is the git-lease binary (bwrap's init). Imported,
// when set, is a delta database that AgentFS made elsewhere: Create takes
// it as the lease's own, and its agent has already run (git lease import).
type Provider struct {
	Self     string
	Imported string
}

// The lease's places under spec.Dir: the exported base (the lower layer),
// the database's directory, and the mount point of /work.
func baseDir(spec sandbox.Spec) string { return filepath.Join(spec.Dir, "base") }
func dbDir(spec sandbox.Spec) string   { return filepath.Join(spec.Dir, "db") }
func dbPath(spec sandbox.Spec) string  { return filepath.Join(dbDir(spec), "delta.db") }
func mountDir(spec sandbox.Spec) string {
	return filepath.Join(spec.Dir, "mnt")
}

// keptPath is where the lease's database is kept once its sandbox is
// discarded: beside the shared bases, one file per lease.
func keptPath(spec sandbox.Spec) string {
	return filepath.Join(filepath.Dir(spec.BasesDir), "agentfs", spec.ID+".db")
}

func (p Provider) bwrap(spec sandbox.Spec) bwrap.Provider {
	return bwrap.Provider{Self: p.Self, Served: &bwrap.Served{Mount: mountDir(spec), Usage: dbDir(spec)}}
}

// Name is "agentfs".
func (Provider) Name() sandbox.ProviderName { return sandbox.AgentFS }

// Sandboxed is true: the agent runs in bwrap's sandbox.
func (Provider) Sandboxed() bool { return true }

// Check fails closed where this process cannot mount FUSE, and where bwrap
// cannot run.
func (p Provider) Check() error {
	if err := fuseAvailable(); err != nil {
		return fmt.Errorf("%w: the agentfs provider serves /work over FUSE, which is not available here (%v): run as root, or use provider = \"bwrap\"", sandbox.ErrUnavailable, err)
	}
	return bwrap.Provider{}.Check()
}

// Create exports the base into the lease's directory and makes its
// database: an empty AgentFS database, or a copy of the imported one
// (checked to be one first). It is idempotent.
func (p Provider) Create(ctx context.Context, spec sandbox.Spec) error {
	if p.Imported != "" {
		if err := os.MkdirAll(spec.Dir, 0o700); err != nil {
			return err
		}
	} else if err := p.bwrap(spec).Create(ctx, spec); err != nil {
		return err
	}
	if _, err := os.Lstat(baseDir(spec)); errors.Is(err, fs.ErrNotExist) {
		tmp := baseDir(spec) + ".tmp"
		os.RemoveAll(tmp)
		if err := os.Mkdir(tmp, 0o755); err != nil {
			return err
		}
		if err := spec.ExportBase(tmp); err != nil {
			return err
		}
		if err := os.Rename(tmp, baseDir(spec)); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dbDir(spec), 0o700); err != nil {
		return err
	}
	if err := os.MkdirAll(mountDir(spec), 0o755); err != nil {
		return err
	}
	if _, err := os.Lstat(dbPath(spec)); err == nil {
		return nil
	}
	if p.Imported != "" {
		return copyDatabase(p.Imported, dbPath(spec))
	}
	afs, err := sdk.Open(ctx, sdk.AgentFSOptions{Path: dbPath(spec)})
	if err != nil {
		return err
	}
	return afs.Close()
}

// copyDatabase copies an AgentFS database and its WAL, if any, after
// checking that it is one of the schema git-lease reads, and checkpoints
// the copy's WAL into it: the lease keeps one file.
func copyDatabase(from, to string) error {
	db, err := openDB(from)
	if err != nil {
		return err
	}
	db.Close()
	for _, suffix := range []string{"-wal", ""} { // the database last: it marks the copy done
		err := copyFile(from+suffix, to+suffix)
		if suffix == "-wal" && errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
	}
	db, err = sql.Open("sqlite", to)
	if err != nil {
		return err
	}
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		db.Close()
		return err
	}
	return db.Close()
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to+".tmp", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, io.LimitReader(in, MaxDatabaseBytes+1)); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(to+".tmp", to)
}

// limit is the database's bound: the disk bound when it is smaller.
func limit(spec sandbox.Spec) int64 {
	if d := spec.Limits.DiskBytes; d > 0 && d < MaxDatabaseBytes {
		return d
	}
	return MaxDatabaseBytes
}

// Launch mounts the lease's /work (served by this process until the
// sandbox ends) and starts bwrap's sandbox around it.
func (p Provider) Launch(ctx context.Context, spec sandbox.Spec, cmd sandbox.Command) (sandbox.Process, error) {
	if p.Imported != "" {
		return nil, fmt.Errorf("%w: an imported AgentFS database has no agent to run", sandbox.ErrUnavailable)
	}
	uid, gid, err := bwrap.IDs(spec)
	if err != nil {
		return nil, err
	}
	stop, err := mount(mountDir(spec), dbPath(spec), baseDir(spec), limit(spec), uid, gid)
	if err != nil {
		return nil, fmt.Errorf("%w: mount the AgentFS /work over FUSE: %v", sandbox.ErrUnavailable, err)
	}
	proc, err := p.bwrap(spec).Launch(ctx, spec, cmd)
	if err != nil {
		stop()
		return nil, err
	}
	full, ok := proc.(fullProcess)
	if !ok {
		proc.Kill()
		proc.Wait()
		stop()
		return nil, fmt.Errorf("bwrap's process is not what the agentfs provider wraps")
	}
	return &process{fullProcess: full, stop: stop}, nil
}

// fullProcess is what bwrap's process is: the lease reads each part.
type fullProcess interface {
	sandbox.Process
	sandbox.SharedFiles
	sandbox.Holders
	sandbox.BypassCounter
	sandbox.EscapeRecorder
}

// process is bwrap's, with /work unmounted (and the database closed, its
// WAL checkpointed) once the sandbox has ended.
type process struct {
	fullProcess
	stop func() error
}

func (p *process) Wait() (sandbox.Exit, error) {
	exit, err := p.fullProcess.Wait()
	if stopErr := p.stop(); err == nil && stopErr != nil {
		err = fmt.Errorf("close the AgentFS database: %w", stopErr)
	}
	return exit, err
}

// Delta is the lease's database, read over its exported base. A database
// that is gone is a Delta whose Root does not exist.
func (Provider) Delta(spec sandbox.Spec) (sandbox.Delta, error) {
	d := sandbox.Delta{Root: dbPath(spec), Layout: sandbox.Overlay}
	if _, err := os.Lstat(d.Root); errors.Is(err, fs.ErrNotExist) {
		return d, nil
	}
	src, err := Read(d.Root, baseDir(spec))
	if err != nil {
		return d, err
	}
	d.Source = src
	return d, nil
}

// Discard detaches /work if a runner that died left it mounted, keeps the
// database at keptPath(spec), and removes the rest with bwrap's Discard.
// Discarding twice is harmless.
func (p Provider) Discard(ctx context.Context, spec sandbox.Spec) error {
	unix.Unmount(mountDir(spec), unix.MNT_DETACH)
	if _, err := os.Lstat(dbPath(spec)); err == nil {
		if err := os.MkdirAll(filepath.Dir(keptPath(spec)), 0o700); err != nil {
			return err
		}
		for _, suffix := range []string{"-wal", ""} {
			if err := os.Rename(dbPath(spec)+suffix, keptPath(spec)+suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return p.bwrap(spec).Discard(ctx, spec)
}

// Kept names the database kept past Discard, for the cleanup receipt ("" when
// there is none).
func (Provider) Kept(spec sandbox.Spec) string {
	if _, err := os.Lstat(keptPath(spec)); err != nil {
		return ""
	}
	return keptPath(spec)
}
