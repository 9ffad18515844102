package refs

import (
	"errors"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// store is go-git's storage that looks again before it calls an object
// missing. go-git lists the pack files once, but git moves objects under
// it: a "git gc --auto" that a commit started in the background packs the
// loose objects and deletes them, and the new pack is not in go-git's list.
type store struct{ *filesystem.Storage }

func (s store) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	return lookTwice(s, func() (plumbing.EncodedObject, error) { return s.Storage.EncodedObject(t, h) })
}

func (s store) HasEncodedObject(h plumbing.Hash) error {
	_, err := lookTwice(s, func() (struct{}, error) { return struct{}{}, s.Storage.HasEncodedObject(h) })
	return err
}

func (s store) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	return lookTwice(s, func() (int64, error) { return s.Storage.EncodedObjectSize(h) })
}

// lookTwice runs find, and once more after re-listing the packs when it
// did not find the object.
func lookTwice[T any](s store, find func() (T, error)) (T, error) {
	v, err := find()
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		s.Reindex()
		v, err = find()
	}
	return v, err
}
