package bwrap

import (
	"path/filepath"
	"strings"
)

// Visible reports whether the host file at path is what the agent sees at
// that path: it lies, with every symlink resolved, in a system directory
// the sandbox binds, or in one of readOnly. A path that does not exist is
// not visible.
func Visible(path string, readOnly []string) bool {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false
	}
	for _, dir := range append(append([]string{}, systemDirs...), readOnly...) {
		if d, err := filepath.EvalSymlinks(dir); err == nil && (real == d || strings.HasPrefix(real, d+"/")) {
			return true
		}
	}
	return false
}
