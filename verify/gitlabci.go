package verify

import (
	"path"
	"strings"
)

// GitLabIncludes lists, as protected-path entries, the files of the
// repository that a .gitlab-ci.yml includes: GitLab runs them as CI
// configuration just like the file itself, so a change to one is a change
// to what CI runs. It reads the YAML loosely, line by line, the way the
// forms GitLab documents are written: `include: FILE`, and under
// `include:` the items `- FILE` and `local: FILE` (not `project:`/`file:`,
// `remote:` or `template:`, which name files elsewhere). A path with a
// wildcard protects the directory before the wildcard. Nothing it misses
// is lost: the .gitlab-ci.yml itself is protected, so a result cannot add
// an include without a finding.
func GitLabIncludes(ci []byte) []string {
	var out []string
	add := func(v string) {
		v = strings.Trim(strings.TrimSpace(strings.SplitN(v, " #", 2)[0]), `'"`)
		if !strings.HasSuffix(v, ".yml") && !strings.HasSuffix(v, ".yaml") || strings.Contains(v, "://") {
			return
		}
		v = strings.TrimLeft(v, "/") // "/x.yml" and "//x.yml" both name the repository's root
		if i := strings.IndexAny(v, "*?["); i >= 0 {
			dir := path.Dir(v[:i] + "x")
			if dir == "." {
				return // a wildcard at the top: .gitlab-ci.yml's own directory, too wide to name
			}
			v = dir + "/"
		} else {
			v = path.Clean(v)
		}
		if v != "" && v != "." && !strings.HasPrefix(v, "../") && !contains(out, v) {
			out = append(out, v)
		}
	}
	inInclude := false
	for _, line := range strings.Split(string(ci), "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if line[0] != ' ' && line[0] != '\t' && line[0] != '-' {
			inInclude = false
			if rest, ok := strings.CutPrefix(trimmed, "include:"); ok {
				inInclude = true
				add(rest)
			}
			continue
		}
		if !inInclude {
			continue
		}
		item := strings.TrimSpace(strings.TrimPrefix(trimmed, "-"))
		if rest, ok := strings.CutPrefix(item, "local:"); ok {
			add(rest)
		} else if !strings.Contains(item, ":") {
			add(item)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
