package bwrap

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
		var total int64
		for _, b := range all {
			total += b.bytes
		}
		slices.SortFunc(all, func(a, b *exported) int { return a.used.Compare(b.used) })
		gone := map[string]bool{}
		for _, b := range all {
			old := now.Sub(b.used) > maxAge
			if gone[b.tree] || !old && (maxBytes == 0 || total <= maxBytes) {
				continue
			}
			above := b.above(all)
			if slices.ContainsFunc(above, func(a *exported) bool { return a.users > 0 }) {
				continue
			}
			for _, a := range above {
				if gone[a.tree] {
					continue
				}
				gone[a.tree] = true
				total -= a.bytes
				why := "over the size cap"
				if old {
					why = "unused since " + a.used.UTC().Format(time.DateOnly)
				}
				verb := "evicted"
				if dryRun {
					verb = "would evict"
				}
				done = append(done, fmt.Sprintf("%s base %s (%s, %s)", verb, a.tree[:12], a.kind, HumanBytes(a.bytes)+", "+why))
				if !dryRun {
					if err := removeAll(basePath(bases, a.tree)); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
	return done, err
}

// exported is one base of a bases directory.
type exported struct {
	tree  string
	kind  string // "whole" or "layer"
	chain []string
	users int
	used  time.Time
	bytes int64
}

// above is b and every base stacked on it, directly or not.
func (b *exported) above(all []*exported) []*exported {
	var out []*exported
	for _, a := range all {
		if slices.Contains(a.chain, b.tree) {
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
		b := &exported{tree: e.Name(), kind: "whole", chain: chain, bytes: diskUsage(dir)}
		if len(chain) > 1 {
			b.kind = "layer"
		}
		users := filepath.Join(dir, "users")
		if fi, err := os.Stat(users); err == nil {
			b.used = fi.ModTime()
			names, _ := os.ReadDir(users)
			b.users = len(names)
		} else if fi, err := os.Stat(dir); err == nil {
			b.used = fi.ModTime()
		}
		all = append(all, b)
	}
	return all, nil
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
