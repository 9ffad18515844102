package hooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// ErrNotRepo is returned by Locate outside a git repository.
var ErrNotRepo = errors.New("not a git repository: run git lease hooks install inside the repository (for a server, inside its bare repository)")

// Location is where git runs a repository's hooks from.
type Location struct {
	// GitDir is the repository's common git directory.
	GitDir string
	// HooksDir is where git looks for hooks: core.hooksPath when it is set
	// (a relative one resolved as git resolves it), else GitDir/hooks.
	HooksDir string
	// Bare reports a bare repository, as a shared server's usually is.
	Bare bool
}

// Locate asks git where the repository around dir keeps its hooks. It
// reads only.
func Locate(ctx context.Context, dir string) (*Location, error) {
	cmd := exec.CommandContext(ctx, "git", "rev-parse", "--path-format=absolute",
		"--git-common-dir", "--git-path", "hooks", "--is-bare-repository")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if strings.Contains(stderr.String(), "not a git repository") {
			return nil, ErrNotRepo
		}
		return nil, fmt.Errorf("git rev-parse: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 3 {
		return nil, fmt.Errorf("git rev-parse: unexpected output %q", out)
	}
	return &Location{GitDir: lines[0], HooksDir: lines[1], Bare: lines[2] == "true"}, nil
}
