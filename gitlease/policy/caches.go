package policy

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/git-lease/git-lease/sandbox/bwrap"
)

// validateCaches checks each cache's name and paths: "VAR:/cache/dir",
// every directory under bwrap.CacheRoot, no two of them nested, no
// variable set twice.
func (e *Effective) validateCaches() error {
	vars := map[string]bool{}
	var dirs []string
	for _, name := range slices.Sorted(maps.Keys(e.Caches)) {
		c := e.Caches[name]
		if !bwrap.ValidCacheName(name) {
			return fmt.Errorf("caches.%s: a cache's name is lowercase letters, digits, - and _", name)
		}
		if len(c.Paths) == 0 {
			return fmt.Errorf("caches.%s.paths is empty: name each directory as \"VAR:%s/dir\"", name, bwrap.CacheRoot)
		}
		for _, p := range c.Paths {
			v, dir, ok := strings.Cut(p, ":")
			if !ok || !envName.MatchString(v) || path.Clean(dir) != dir || !strings.HasPrefix(dir, bwrap.CacheRoot+"/") {
				return fmt.Errorf("caches.%s.paths: %q: use \"VAR:%s/dir\", a variable and a clean directory under %s", name, p, bwrap.CacheRoot, bwrap.CacheRoot)
			}
			if vars[v] {
				return fmt.Errorf("caches.%s.paths: %s is set by another cache path", name, v)
			}
			vars[v] = true
			for _, d := range dirs {
				if d == dir || strings.HasPrefix(dir, d+"/") || strings.HasPrefix(d, dir+"/") {
					return fmt.Errorf("caches.%s.paths: %s overlaps %s: each cache directory belongs to one cache", name, dir, d)
				}
			}
			dirs = append(dirs, dir)
		}
	}
	return nil
}
