package refs

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
)

// Attributes name drivers, and a driver is a program from the user's git
// config: filter.<name>.clean, .smudge and .process run when git writes or
// reads a work tree, merge.<name>.driver when git merges a path, and
// diff.<name>.command and .textconv when git diffs one. A result chooses
// which driver applies to which of its files (a .gitattributes at any depth,
// or a path that an existing attribute matches), so git-lease runs every git
// command that writes, merges or compares a tree with each configured driver
// neutralised: an empty filter means git copies the bytes as they are
// (required=false, so that git does not fail instead), an empty merge driver
// or textconv is a program git cannot start, so the merge conflicts and
// nothing runs. A driver that no config file names does nothing in git, so
// the configured names are all there are: git-lease asks git for them before
// each such command (git config --get-regexp, which runs no program).

// driverCommands are the git commands git-lease runs with drivers
// neutralised: those that check out, read into a work tree, merge, apply or
// look at a work tree's files.
var driverCommands = map[string]bool{
	"read-tree": true, "checkout": true, "checkout-index": true, "worktree": true, "apply": true,
	"merge": true, "merge-tree": true, "reset": true, "stash": true, "status": true, "diff": true,
	"diff-tree": true, "diff-index": true, "diff-files": true, "update-index": true, "add": true, "rm": true,
}

// driverVars are the settings that make a driver run a program, with the
// value that makes it run none.
var driverVars = map[string][][2]string{
	"filter": {{"process", ""}, {"smudge", ""}, {"clean", ""}, {"required", "false"}},
	"merge":  {{"driver", ""}},
	"diff":   {{"command", ""}, {"textconv", ""}},
}

// neutralDrivers returns the environment that overrides every driver the
// git config read with gitDir names. It fails closed: if git's
// config cannot be listed, the command is not run.
func neutralDrivers(ctx context.Context, dir, gitDir string, env []string) ([]string, error) {
	cmd := exec.CommandContext(ctx, "git", "config", "-z", "--name-only", "--get-regexp", `^(filter|merge|diff)\.`)
	cmd.Dir = dir
	cmd.Env = append(append(gitEnv(os.Environ()), "GIT_DIR="+gitDir), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 && stderr.Len() == 0 {
		return nil, nil // no driver configured
	}
	if err != nil {
		return nil, &GitError{Args: []string{"config", "--get-regexp"}, Stderr: strings.TrimSpace(stderr.String()), Err: err}
	}
	seen := map[string]bool{}
	var keys, values []string
	for _, key := range strings.Split(string(out), "\x00") {
		section, rest, ok := strings.Cut(key, ".")
		dot := strings.LastIndexByte(rest, '.')
		if !ok || dot < 0 || seen[section+"."+rest[:dot]] {
			continue // a driver's own name with no subsection is no driver
		}
		seen[section+"."+rest[:dot]] = true
		for _, v := range driverVars[strings.ToLower(section)] {
			keys, values = append(keys, section+"."+rest[:dot]+"."+v[0]), append(values, v[1])
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	// Appended to GIT_CONFIG_PARAMETERS (where git keeps -c), which git
	// reads after GIT_CONFIG_COUNT and every config file: the overrides
	// come last, so nothing set by an outer git -c undoes them, and a
	// name holding "=" stays one name (git -c would split it).
	params := ""
	for _, kv := range append(gitEnv(os.Environ()), env...) {
		if v, ok := strings.CutPrefix(kv, "GIT_CONFIG_PARAMETERS="); ok {
			params = v
		}
	}
	for i := range keys {
		params += " " + sqQuote(keys[i]) + "=" + sqQuote(values[i])
	}
	return []string{"GIT_CONFIG_PARAMETERS=" + strings.TrimPrefix(params, " ")}, nil
}

// sqQuote quotes s as git's sq_quote_buf does, for GIT_CONFIG_PARAMETERS.
func sqQuote(s string) string {
	r := strings.NewReplacer("'", `'\''`, "!", `'\!'`)
	return "'" + r.Replace(s) + "'"
}
