package agentfs

import (
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
	_ "modernc.org/sqlite" // the pure-Go SQLite that AgentFS's own Go SDK uses

	"github.com/git-lease/git-lease/sandbox"
)

// SchemaVersion is the AgentFS schema (fs_config.schema_version) that
// git-lease reads and writes.
const SchemaVersion = "0.4"

// MaxDatabaseBytes bounds a delta database: the one the provider serves
// (the agent's writes fail with ENOSPC beyond it, less the disk bound when
// that is smaller) and one that import reads.
const MaxDatabaseBytes = 4 << 30

// rootIno is the inode of the root directory in every AgentFS database.
const rootIno = 1

var (
	// ErrNotAgentFS is returned for a file that is not an AgentFS database
	// of the schema git-lease reads.
	ErrNotAgentFS = errors.New("not an AgentFS database of schema " + SchemaVersion)
)

// openDB opens an AgentFS database read-only, so that reading it never
// changes it (a read-write open would checkpoint and remove its WAL), and
// checks its schema version.
func openDB(path string) (*sql.DB, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w (not a regular file)", path, ErrNotAgentFS)
	}
	if st.Size() > MaxDatabaseBytes {
		return nil, fmt.Errorf("%s: the database has %d bytes, more than the bound of %d", path, st.Size(), MaxDatabaseBytes)
	}
	u := url.URL{Scheme: "file", Path: path, RawQuery: "mode=ro&_pragma=trusted_schema(0)&_pragma=query_only(1)"}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, err
	}
	var version string
	if err := db.QueryRow(`SELECT value FROM fs_config WHERE key = 'schema_version'`).Scan(&version); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w: %v", path, ErrNotAgentFS, err)
	}
	if version != SchemaVersion {
		db.Close()
		return nil, fmt.Errorf("%s: %w: its schema_version is %q", path, ErrNotAgentFS, version)
	}
	return db, nil
}

// node is one entry of the delta's tree, with its inode.
type node struct {
	sandbox.Entry
	ino int64
}

// Source is an AgentFS delta database read as a sandbox.Source: its
// entries are the database's tree (fs_dentry from inode 1) and its
// whiteouts, less what is the same as the base (a copy-up is not a
// change). It holds the database open.
type Source struct {
	db      *sql.DB
	entries []node
}

// Read reads the delta in the AgentFS database at path over the base whose
// files are exported in directory base. A whiteout hides its path and all
// under it; a directory of the delta that replaces a whiteout or a
// non-directory of the base is opaque (AgentFS has no opaque directories of
// its own: recreating a deleted directory shows the base's children again
// unless the whiteout stays). Entries the same as the base (bytes, mode,
// type, symlink target) are left out, as are whiteouts of nothing.
func Read(path, base string) (*Source, error) {
	db, err := openDB(path)
	if err != nil {
		return nil, err
	}
	s := &Source{db: db}
	if err := s.load(base); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Close closes the database.
func (s *Source) Close() error { return s.db.Close() }

func (s *Source) load(basePath string) error {
	base, err := os.Open(basePath)
	if err != nil {
		return err
	}
	defer base.Close()
	tree, err := s.readTree()
	if err != nil {
		return err
	}
	whiteouts, err := s.readWhiteouts()
	if err != nil {
		return err
	}
	delta := map[string]bool{}
	for _, n := range tree {
		delta[n.Path] = true
	}
	all := tree
	for _, p := range whiteouts {
		if !delta[p] {
			all = append(all, node{Entry: sandbox.Entry{Path: p, HostPath: "agentfs:" + p, Kind: sandbox.Whiteout}})
		}
	}
	slices.SortFunc(all, func(a, b node) int { return comparePaths(a.Path, b.Path) })
	hidden := map[string]bool{} // whiteouts, and directories that replace what the base had
	for _, p := range whiteouts {
		hidden[p] = true
	}
	var replaced []string // paths under which the base does not show
	for _, n := range all {
		under := slices.ContainsFunc(replaced, func(r string) bool { return strings.HasPrefix(n.Path, r+"/") })
		var b baseEntry
		if !under {
			b = lookupBase(base, n.Path)
		}
		switch {
		case n.Kind == sandbox.Whiteout:
			if under || !b.exists {
				continue // hides nothing
			}
			replaced = append(replaced, n.Path)
		case n.Kind == sandbox.Dir:
			n.Opaque = !under && (hidden[n.Path] || b.exists && b.kind != sandbox.Dir)
			if n.Opaque {
				replaced = append(replaced, n.Path)
			}
		case !under && b.exists && !hidden[n.Path]:
			same, err := s.sameAsBase(n, b, base)
			if err != nil {
				return err
			}
			if same {
				continue
			}
		}
		s.entries = append(s.entries, n)
	}
	return nil
}

// comparePaths orders paths as a walk of directories does: by component,
// parents before children.
func comparePaths(a, b string) int {
	return slices.Compare(strings.Split(a, "/"), strings.Split(b, "/"))
}

// readTree walks fs_dentry from the root, never visiting a directory twice
// (a database from elsewhere may hold a cycle).
func (s *Source) readTree() ([]node, error) {
	var out []node
	seen := map[int64]bool{rootIno: true}
	var walk func(ino int64, dir string) error
	walk = func(ino int64, dir string) error {
		rows, err := s.db.Query(`SELECT d.name, d.ino, i.mode, i.size FROM fs_dentry d JOIN fs_inode i ON i.ino = d.ino WHERE d.parent_ino = ? ORDER BY d.name`, ino)
		if err != nil {
			return err
		}
		var children []node
		for rows.Next() {
			var n node
			var name string
			var mode uint32
			if err := rows.Scan(&name, &n.ino, &mode, &n.Size); err != nil {
				rows.Close()
				return err
			}
			n.Path = dir + name
			if strings.Contains(name, "/") || !sandbox.CleanRel(n.Path) {
				rows.Close()
				return fmt.Errorf("fs_dentry holds the name %q under %q", name, dir)
			}
			n.HostPath = "agentfs:" + n.Path
			n.Mode = sandbox.FileMode(mode)
			n.Kind = kindOf(mode)
			children = append(children, n)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, n := range children {
			if n.Kind == sandbox.Symlink {
				if err := s.db.QueryRow(`SELECT target FROM fs_symlink WHERE ino = ?`, n.ino).Scan(&n.Target); err != nil {
					return fmt.Errorf("%s: symlink target: %w", n.Path, err)
				}
				n.Size = int64(len(n.Target))
			}
			out = append(out, n)
			if n.Kind != sandbox.Dir {
				continue
			}
			if seen[n.ino] {
				return fmt.Errorf("%s: directory inode %d is linked twice", n.Path, n.ino)
			}
			seen[n.ino] = true
			if err := walk(n.ino, n.Path+"/"); err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk(rootIno, "")
}

// readWhiteouts reads fs_whiteout's path column only: the CLI's table has
// no parent_path, although the SDKs' has. A database without overlay
// tables has no whiteouts.
func (s *Source) readWhiteouts() ([]string, error) {
	var exists int
	if err := s.db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'fs_whiteout'`).Scan(&exists); err != nil || exists == 0 {
		return nil, err
	}
	rows, err := s.db.Query(`SELECT path FROM fs_whiteout`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, err
		}
		rel := strings.TrimPrefix(p, "/")
		if !strings.HasPrefix(p, "/") || !sandbox.CleanRel(rel) {
			return nil, fmt.Errorf("fs_whiteout holds the path %q", p)
		}
		out = append(out, rel)
	}
	return out, rows.Err()
}

func kindOf(mode uint32) sandbox.Kind {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return sandbox.File
	case unix.S_IFDIR:
		return sandbox.Dir
	case unix.S_IFLNK:
		return sandbox.Symlink
	}
	return sandbox.Special
}

// Walk visits the delta's entries in the order of a directory walk.
func (s *Source) Walk(fn func(sandbox.Entry) error) error {
	for _, n := range s.entries {
		if err := fn(n.Entry); err != nil {
			return err
		}
	}
	return nil
}

// Open copies a file entry's content from the database into an anonymous
// memory file: the entry is bounded (precheck refuses oversize files
// before anything is read).
func (s *Source) Open(e sandbox.Entry) (*os.File, error) {
	for _, n := range s.entries {
		if n.Path == e.Path && n.Kind == sandbox.File && n.Size == e.Size {
			return s.content(n)
		}
	}
	return nil, fmt.Errorf("%s: %w", e.Path, sandbox.ErrChanged)
}

// content reads a file inode's chunks into a memfd, each at its place
// (chunk_index × chunk_size; a missing chunk is a hole of zeros), cut at
// the inode's size, as AgentFS itself reads them.
func (s *Source) content(n node) (*os.File, error) {
	var chunk int64
	if err := s.db.QueryRow(`SELECT CAST(value AS INTEGER) FROM fs_config WHERE key = 'chunk_size'`).Scan(&chunk); err != nil || chunk <= 0 {
		return nil, fmt.Errorf("fs_config has no valid chunk_size (%v)", err)
	}
	fd, err := unix.MemfdCreate("agentfs", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), n.HostPath)
	fail := func(err error) (*os.File, error) {
		f.Close()
		return nil, fmt.Errorf("%s: %w", n.Path, err)
	}
	if err := f.Truncate(n.Size); err != nil {
		return fail(err)
	}
	rows, err := s.db.Query(`SELECT chunk_index, data FROM fs_data WHERE ino = ? AND chunk_index >= 0 AND chunk_index * ? < ?`, n.ino, chunk, n.Size)
	if err != nil {
		return fail(err)
	}
	defer rows.Close()
	for rows.Next() {
		var index int64
		var data []byte
		if err := rows.Scan(&index, &data); err != nil {
			return fail(err)
		}
		off := index * chunk
		if int64(len(data)) > chunk {
			return fail(fmt.Errorf("chunk %d of inode %d has %d bytes, more than chunk_size %d", index, n.ino, len(data), chunk))
		}
		data = data[:min(int64(len(data)), n.Size-off)]
		if _, err := f.WriteAt(data, off); err != nil {
			return fail(err)
		}
	}
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	return f, nil
}
