package refs

import (
	"bytes"
	"context"
	"strings"
)

// Config returns the value of a git configuration key as git resolves it
// for this repository (system, global, repository; the last value wins),
// or "" when it is unset. All of git's configuration is read once, with one
// git process, and kept for the life of the Repo.
func (r *Repo) Config(key string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.config == nil {
		r.config = map[string]string{}
		out, err := r.GitAt(context.Background(), r.GitDir, nil, nil, "config", "--list", "-z")
		if err == nil {
			for _, entry := range bytes.Split(out, []byte{0}) {
				k, v, _ := strings.Cut(string(entry), "\n")
				if k != "" {
					r.config[k] = v
				}
			}
		}
	}
	return r.config[normalizeKey(key)]
}

// normalizeKey lowercases a key's section and name, as git prints them;
// a subsection keeps its case.
func normalizeKey(key string) string {
	first, last := strings.Index(key, "."), strings.LastIndex(key, ".")
	if first < 0 {
		return strings.ToLower(key)
	}
	return strings.ToLower(key[:first]) + key[first:last] + strings.ToLower(key[last:])
}
