package verify

import (
	"path"
	"slices"
	"strings"
)

// caseCollisions finds paths of the result tree that share a directory and
// fold to the same name, so a case-insensitive, HFS+ or NTFS checkout would
// write one over the other (the trick behind CVE-2021-21300). A collision is
// reported only when the change made or touched one of its paths: a base
// that already collides (some old trees do) is not the agent's doing.
func caseCollisions(changed []Candidate, resultPaths []string) []Finding {
	touched := map[string]bool{}
	for _, c := range changed {
		if c.Deleted {
			continue
		}
		for p := c.Path; p != "." && p != "/" && !touched[p]; p = path.Dir(p) {
			touched[p] = true
		}
	}
	groups := map[string][]string{}
	for _, p := range resultPaths {
		dir, name := splitPath(p)
		key := dir + "/" + foldName(name)
		if !slices.Contains(groups[key], p) {
			groups[key] = append(groups[key], p)
		}
	}
	var out []Finding
	for _, g := range groups {
		if len(g) < 2 || !slices.ContainsFunc(g, func(p string) bool { return touched[p] }) {
			continue
		}
		slices.Sort(g)
		for _, p := range g[1:] {
			out = append(out, *newFinding(RuleCaseCollision, p, "collides with %q on a case-insensitive file system", g[0]))
		}
	}
	return out
}

// splitPath splits p at its last slash; a top-level name has dir "".
func splitPath(p string) (dir, name string) {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i], p[i+1:]
	}
	return "", p
}
