package refs

import (
	"io"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// BlobHead returns at most n bytes from the start of a blob.
func (r *Repo) BlobHead(h plumbing.Hash, n int64) ([]byte, error) {
	b, err := object.GetBlob(r.store, h)
	if err != nil {
		return nil, err
	}
	rd, err := b.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(io.LimitReader(rd, n))
}

// DirEntries lists the names of the entries of directory dir ("" for the
// root) in tree, with a "/" appended to subdirectories. A dir that is not
// in the tree has no entries.
func (r *Repo) DirEntries(tree plumbing.Hash, dir string) ([]string, error) {
	t, err := r.Tree(tree)
	if err != nil {
		return nil, err
	}
	if dir != "" {
		if t, err = t.Tree(dir); err != nil {
			return nil, nil
		}
	}
	out := make([]string, 0, len(t.Entries))
	for _, e := range t.Entries {
		name := e.Name
		if e.Mode == filemode.Dir {
			name += "/"
		}
		out = append(out, name)
	}
	return out, nil
}

// Neighbourhood returns the paths a case-collision check needs for the
// given changed paths: every entry of every directory on the way to each
// of them, as full paths (directories without a trailing slash). It costs
// what the change touches, not the size of the tree.
func (r *Repo) Neighbourhood(tree plumbing.Hash, changed []string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for _, p := range changed {
		dir := ""
		for _, part := range strings.Split(p, "/") {
			if !seen[dir+"/"] {
				seen[dir+"/"] = true
				names, err := r.DirEntries(tree, dir)
				if err != nil {
					return nil, err
				}
				for _, n := range names {
					full := strings.TrimSuffix(n, "/")
					if dir != "" {
						full = dir + "/" + full
					}
					if !seen[full] {
						seen[full] = true
						out = append(out, full)
					}
				}
			}
			if dir == "" {
				dir = part
			} else {
				dir += "/" + part
			}
		}
	}
	return out, nil
}
