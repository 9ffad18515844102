package refs

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"golang.org/x/sys/unix"
)

// ExportTree writes the files of tree into dir, which must exist and be
// empty: regular files with their executable bit, symlinks as symlinks, and
// submodules (gitlinks) as empty directories. Content is written exactly as
// stored: no filters, no line-ending conversion, no attributes, because the
// tree may be untrusted. Names are checked to be plain, so nothing is
// written outside dir. Objects are read in this goroutine (the store's
// open pack files are not shared between goroutines) and written by a
// pool, since creating files is what costs.
func (r *Repo) ExportTree(tree plumbing.Hash, dir string) error {
	e := r.newExporter()
	return e.finish(e.tree(tree, dir))
}

// LayerMarks makes the entries of a layer that are not files: what hides
// a path of the layers below. Paths are those of the layer's directory.
type LayerMarks interface {
	// Whiteout makes path (which does not exist) hide the entry below it.
	Whiteout(path string) error
	// Opaque makes the directory path hide everything below it.
	Opaque(path string) error
}

// ExportLayer writes into dir, which must exist and be empty, what turns
// an export of tree from into one of tree to when laid over it: the files
// that to adds or changes, exactly as ExportTree writes them; whiteouts for the
// entries it removes (a whole directory is one whiteout); and, where a
// directory of to replaces a file, an opaque directory with the whole
// subtree. Directories both trees have are plain directories, so they
// merge with the ones below. It reads only the subtrees that differ: it
// costs what changed, not the size of the tree.
func (r *Repo) ExportLayer(from, to plumbing.Hash, dir string, marks LayerMarks) error {
	e := r.newExporter()
	return e.finish(e.layer(from, to, dir, marks))
}

// exporter reads objects and hands the files to a pool of writers.
type exporter struct {
	r    *Repo
	jobs chan exportJob
	errs chan error
	wg   sync.WaitGroup
}

// exportWriters is how many goroutines create the files. The walk hands
// them the files of one directory after another, and creating files in
// one directory is serialized by the kernel on that directory's lock:
// past two writers they mostly wait there (four took 40-70% more CPU time
// than two at 1k and 10k files, interleaved, on 2 cores under load).
const exportWriters = 2

type exportJob struct {
	path    string
	mode    filemode.FileMode
	content []byte
}

func (r *Repo) newExporter() *exporter {
	e := &exporter{r: r, jobs: make(chan exportJob, 256), errs: make(chan error, 1)}
	for i := 0; i < exportWriters; i++ {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			for j := range e.jobs {
				if err := writeFile(j.path, j.mode, j.content); err != nil {
					select {
					case e.errs <- err:
					default:
					}
				}
			}
		}()
	}
	return e
}

// finish waits for the writers and returns the first error.
func (e *exporter) finish(err error) error {
	close(e.jobs)
	e.wg.Wait()
	if err != nil {
		return err
	}
	select {
	case err := <-e.errs:
		return err
	default:
		return nil
	}
}

// entries reads tree h, checking that every name is plain.
func (e *exporter) entries(h plumbing.Hash) ([]object.TreeEntry, error) {
	t, err := e.r.Tree(h)
	if err != nil {
		return nil, err
	}
	for _, te := range t.Entries {
		if te.Name == "" || te.Name == "." || te.Name == ".." || filepath.Base(te.Name) != te.Name || te.Name == ".git" {
			return nil, fmt.Errorf("tree %s has an entry named %q that cannot be written safely", h, te.Name)
		}
	}
	return t.Entries, nil
}

// tree writes the whole tree h into the existing directory into.
func (e *exporter) tree(h plumbing.Hash, into string) error {
	entries, err := e.entries(h)
	if err != nil {
		return err
	}
	for _, te := range entries {
		if err := e.entry(te, filepath.Join(into, te.Name)); err != nil {
			return err
		}
	}
	return nil
}

// entry writes one tree entry at p, which does not exist.
func (e *exporter) entry(te object.TreeEntry, p string) error {
	switch te.Mode {
	case filemode.Dir:
		if err := os.Mkdir(p, 0o755); err != nil {
			return err
		}
		return e.tree(te.Hash, p)
	case filemode.Submodule:
		return os.Mkdir(p, 0o755)
	}
	content, err := e.r.ReadBlob(te.Hash, math.MaxInt64)
	if err != nil {
		return err
	}
	select {
	case err := <-e.errs:
		return err
	case e.jobs <- exportJob{p, te.Mode, content}:
		return nil
	}
}

// layer writes into the existing directory into what turns directory tree
// from into directory tree to (see ExportLayer).
func (e *exporter) layer(from, to plumbing.Hash, into string, marks LayerMarks) error {
	old, err := e.entries(from)
	if err != nil {
		return err
	}
	next, err := e.entries(to)
	if err != nil {
		return err
	}
	was := make(map[string]object.TreeEntry, len(old))
	for _, te := range old {
		was[te.Name] = te
	}
	for _, te := range next {
		p := filepath.Join(into, te.Name)
		prev, existed := was[te.Name]
		delete(was, te.Name)
		switch {
		case existed && prev.Mode == te.Mode && prev.Hash == te.Hash:
		case existed && prev.Mode == filemode.Dir && te.Mode == filemode.Dir:
			if err := os.Mkdir(p, 0o755); err != nil {
				return err
			}
			if err := e.layer(prev.Hash, te.Hash, p, marks); err != nil {
				return err
			}
		case existed && (te.Mode == filemode.Dir || te.Mode == filemode.Submodule):
			// A directory where a file was, or a submodule's empty
			// directory where another directory was: nothing below shows.
			if err := e.entry(te, p); err != nil {
				return err
			}
			if err := marks.Opaque(p); err != nil {
				return err
			}
		default:
			// A file over anything, or anything over nothing.
			if err := e.entry(te, p); err != nil {
				return err
			}
		}
	}
	for _, te := range old {
		if _, gone := was[te.Name]; gone {
			if err := marks.Whiteout(filepath.Join(into, te.Name)); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeFile creates one exported file (or symlink) that must not exist.
// It opens, writes and closes the file with plain system calls: os.OpenFile
// offers every file it opens to the runtime's poller, which for a regular
// file costs an epoll_ctl that fails and four fcntl calls, more system
// calls than the file's own three.
func writeFile(path string, mode filemode.FileMode, content []byte) error {
	if mode == filemode.Symlink {
		return os.Symlink(string(content), path)
	}
	perm := uint32(0o644)
	if mode == filemode.Executable {
		perm = 0o755
	}
	fd, err := unix.Open(path, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	for len(content) > 0 && err == nil {
		var n int
		if n, err = unix.Write(fd, content); n == 0 && err == nil {
			err = io.ErrShortWrite
		}
		content = content[max(n, 0):]
	}
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		return &os.PathError{Op: "write", Path: path, Err: err}
	}
	return nil
}
