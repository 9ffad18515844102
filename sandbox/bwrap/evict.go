package bwrap

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// EvictBases removes from bases (a BasesDir) the exported bases that no
// lease uses and that were last used before now-maxAge, then, oldest
// first, unused ones until what stays takes at most maxBytes (0: no cap).
// A base goes with every layer stacked on it; a base in use, or under a
// layer in use, never goes. With dryRun it removes nothing. It returns
// one line per base it removed (or would).
func EvictBases(bases string, maxAge time.Duration, maxBytes int64, now time.Time, dryRun bool) ([]string, error) {
	var done []string
	err := withBasesLock(bases, func() error {
		all, err := listBases(bases)
		if err != nil {
			return err
		}
		done, err = evict(all, maxAge, maxBytes, now, dryRun)
		return err
	})
	return done, err
}

// evict removes, of all (the bases or the cache layers of one directory,
// whose lock the caller holds), those that no lease uses and that were
// last used before now-maxAge, then the least recently used while all
// take more than maxBytes (0: no cap). Each goes with what stands on it,
// and one under something in use stays: the users files that Create
// writes and Discard removes, under the same lock, are what keeps a
// lease's lower layers in place.
func evict(all []*exported, maxAge time.Duration, maxBytes int64, now time.Time, dryRun bool) ([]string, error) {
	var done []string
	var total int64
	for _, b := range all {
		total += b.bytes
	}
	slices.SortFunc(all, func(a, b *exported) int { return a.used.Compare(b.used) })
	gone := map[string]bool{}
	for _, b := range all {
		old := now.Sub(b.used) > maxAge
		if gone[b.key] || !old && (maxBytes == 0 || total <= maxBytes) {
			continue
		}
		above := b.above(all)
		if slices.ContainsFunc(above, func(a *exported) bool { return a.users > 0 }) {
			continue
		}
		for _, a := range above {
			if gone[a.key] {
				continue
			}
			gone[a.key] = true
			total -= a.bytes
			why := "over the size cap"
			if old {
				why = "unused since " + a.used.UTC().Format(time.DateOnly)
			}
			verb := "evicted"
			if dryRun {
				verb = "would evict"
			}
			done = append(done, fmt.Sprintf("%s %s (%s)", verb, a.name, strings.Join(slices.Concat(a.kind, []string{HumanBytes(a.bytes), why}), ", ")))
			if !dryRun {
				if err := removeAll(a.dir); err != nil {
					return done, err
				}
			}
		}
	}
	return done, nil
}

// exported is something gc may evict: a base, or a cache layer.
type exported struct {
	key   string   // the tree of a base, name/seq of a cache layer
	name  string   // as gc's report names it
	kind  []string // what the report says of it first ("whole" or "layer")
	dir   string
	chain []string // the keys it stands on, itself first
	users int
	used  time.Time
	bytes int64
}

// above is b and every base stacked on it, directly or not.
func (b *exported) above(all []*exported) []*exported {
	var out []*exported
	for _, a := range all {
		if slices.Contains(a.chain, b.key) {
			out = append(out, a)
		}
	}
	return out
}

func listBases(bases string) ([]*exported, error) {
	entries, err := os.ReadDir(bases)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var all []*exported
	for _, e := range entries {
		if !validTree(e.Name()) {
			continue
		}
		chain, err := stack(bases, e.Name())
		if err != nil || len(chain) == 0 {
			continue // not a base (a crashed export is cleared by the next)
		}
		dir := basePath(bases, e.Name())
		b := &exported{key: e.Name(), name: "base " + e.Name()[:12], kind: []string{"whole"}, dir: dir, chain: chain, bytes: diskUsage(dir)}
		if len(chain) > 1 {
			b.kind = []string{"layer"}
		}
		b.users, b.used = usersOf(dir)
		all = append(all, b)
	}
	return all, nil
}

// usersOf reads the users directory of dir (a base or a cache layer): how
// many leases use it, and when one last came or went (dir's own
// modification time when none ever did).
func usersOf(dir string) (int, time.Time) {
	users := filepath.Join(dir, "users")
	if fi, err := os.Stat(users); err == nil {
		names, _ := os.ReadDir(users)
		return len(names), fi.ModTime()
	}
	if fi, err := os.Stat(dir); err == nil {
		return 0, fi.ModTime()
	}
	return 0, time.Time{}
}

// HumanBytes is n bytes in KiB, MiB or GiB.
func HumanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", n>>10)
}
