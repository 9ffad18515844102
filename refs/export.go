package refs

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
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
	type job struct {
		path    string
		mode    filemode.FileMode
		content []byte
	}
	jobs := make(chan job, 256)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for i := 0; i < max(4, 2*runtime.NumCPU()); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if err := writeFile(j.path, j.mode, j.content); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	var walk func(h plumbing.Hash, into string) error
	walk = func(h plumbing.Hash, into string) error {
		t, err := r.Tree(h)
		if err != nil {
			return err
		}
		for _, e := range t.Entries {
			if e.Name == "" || e.Name == "." || e.Name == ".." || filepath.Base(e.Name) != e.Name || e.Name == ".git" {
				return fmt.Errorf("tree %s has an entry named %q that cannot be written safely", h, e.Name)
			}
			p := filepath.Join(into, e.Name)
			switch e.Mode {
			case filemode.Dir:
				if err := os.Mkdir(p, 0o755); err != nil {
					return err
				}
				if err := walk(e.Hash, p); err != nil {
					return err
				}
			case filemode.Submodule:
				if err := os.Mkdir(p, 0o755); err != nil {
					return err
				}
			default:
				content, err := r.ReadBlob(e.Hash, math.MaxInt64)
				if err != nil {
					return err
				}
				select {
				case err := <-errs:
					return err
				case jobs <- job{p, e.Mode, content}:
				}
			}
		}
		return nil
	}
	err := walk(tree, dir)
	close(jobs)
	wg.Wait()
	if err != nil {
		return err
	}
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// writeFile creates one exported file (or symlink) that must not exist.
func writeFile(path string, mode filemode.FileMode, content []byte) error {
	if mode == filemode.Symlink {
		return os.Symlink(string(content), path)
	}
	perm := os.FileMode(0o644)
	if mode == filemode.Executable {
		perm = 0o755
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(content); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
