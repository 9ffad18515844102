package refs

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// PackedRef returns the value that the packed-refs file alone gives name,
// or plumbing.ZeroHash when it does not list it (a loose ref of the same
// name, if any, would take precedence over it). It reads the file without
// taking git's lock, as git's readers do.
func (r *Repo) PackedRef(name string) (plumbing.Hash, error) {
	f, err := os.Open(filepath.Join(r.CommonDir, "packed-refs"))
	if errors.Is(err, os.ErrNotExist) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		oid, ref, ok := strings.Cut(sc.Text(), " ")
		if ok && ref == name && len(oid) == 40 {
			return plumbing.NewHash(oid), nil
		}
	}
	return plumbing.ZeroHash, sc.Err()
}
