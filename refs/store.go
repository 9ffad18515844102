package refs

import (
	"errors"
	"io"
	"slices"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// store is go-git's storage that looks again before it calls an object
// missing, when the pack files have changed. go-git lists the pack files
// once, but git moves objects under it: a "git gc --auto" that a commit
// started in the background packs the loose objects and deletes them, and
// the new pack is not in go-git's list. Most misses are real (a tree or
// blob about to be written), so the packs are re-listed only when the
// pack directory differs from the last listing: re-listing decodes every
// pack index again.
//
// go-git's storage is not safe for concurrent use (it caches the list of
// loose objects, and its open pack files are read with seek and read), and
// one Repo serves every goroutine of a process: mu makes each call to it
// one at a time. Objects it returns are complete in memory, or (large
// packed ones) open their own file to be read.
type store struct {
	*filesystem.Storage
	mu    *sync.Mutex
	packs *[]plumbing.Hash // the pack files at the last listing
}

func newStore(s *filesystem.Storage) store {
	packs, _ := s.ObjectPacks()
	return store{Storage: s, mu: &sync.Mutex{}, packs: &packs}
}

func (s store) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	return lookTwice(s, func() (plumbing.EncodedObject, error) { return s.Storage.EncodedObject(t, h) })
}

func (s store) SetEncodedObject(o plumbing.EncodedObject) (plumbing.Hash, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Storage.SetEncodedObject(o)
}

func (s store) Reference(name plumbing.ReferenceName) (*plumbing.Reference, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Storage.Reference(name)
}

// writeLoose streams one loose object through go-git's writer, holding
// the store for the whole write.
func (s store) writeLoose(write func(w io.WriteCloser, header func(plumbing.ObjectType, int64) error) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, header, err := s.ObjectStorage.LazyWriter()
	if err != nil {
		return err
	}
	return write(w, header)
}

func (s store) HasEncodedObject(h plumbing.Hash) error {
	_, err := lookTwice(s, func() (struct{}, error) { return struct{}{}, s.Storage.HasEncodedObject(h) })
	return err
}

func (s store) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	return lookTwice(s, func() (int64, error) { return s.Storage.EncodedObjectSize(h) })
}

// lookTwice runs find, and once more after re-listing the packs when it
// did not find the object and the packs have changed.
func lookTwice[T any](s store, find func() (T, error)) (T, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := find()
	if errors.Is(err, plumbing.ErrObjectNotFound) && s.packsChanged() {
		s.Reindex()
		v, err = find()
	}
	return v, err
}

// packsChanged reports whether the pack directory lists other packs than
// at the last listing, and remembers the new list.
func (s store) packsChanged() bool {
	now, err := s.ObjectPacks()
	if err != nil || slices.Equal(now, *s.packs) {
		return false
	}
	*s.packs = now
	return true
}
