package gitlease

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/git-lease/git-lease/sandbox/bwrap"
)

// agentProgram is an agent's program as a lease runs it.
type agentProgram struct {
	// Path is the program to run: as given, found on the sandbox's PATH,
	// or, for one installed under the user's home, its real path.
	Path string
	// ByPath is true when the sandbox's PATH does not find the program
	// (it is installed under the user's home, or in a visible directory
	// off that PATH, such as /opt/agents/bin): the lease runs Path.
	ByPath bool
	// Binds are install directories under the user's home that the
	// sandbox binds read-only at their host paths: the program's and its
	// interpreter's (see installDir).
	Binds []string
	// PATH are directories the agent's PATH adds after the system's, so
	// that a "#!/usr/bin/env node" line finds a node installed in the home.
	PATH []string
}

// findAgent finds an agent's program as a lease will run it: for a
// sandboxed lease, on the sandbox's PATH, in a read-only path, or on the
// user's PATH under the home (whose install directory the lease binds),
// with the interpreter its #! line names found the same way; otherwise on
// the user's PATH. A program that the sandbox could not run is an error
// that says why, so that no lease starts to exit 127.
func findAgent(program string, readOnly []string, sandboxed bool) (agentProgram, error) {
	if !filepath.IsAbs(program) && strings.Contains(program, "/") {
		return agentProgram{Path: program}, nil // in the lease's own tree: it is there or not when the agent starts
	}
	if !sandboxed {
		path, err := exec.LookPath(program)
		if err != nil {
			return agentProgram{}, fmt.Errorf("agent program %s is not installed (not on your PATH)", program)
		}
		return agentProgram{Path: path}, nil
	}
	p, err := locate(program, readOnly)
	if err != nil {
		return agentProgram{}, fmt.Errorf("agent program %s %w", program, err)
	}
	interp, err := interpreter(p.Path)
	if err != nil || interp == "" {
		return p, err
	}
	ip, err := locate(interp, append(append([]string{}, readOnly...), p.Binds...))
	if err != nil {
		return agentProgram{}, fmt.Errorf("agent program %s (%s) runs with %s, named by its #! line, which %w", program, p.Path, interp, err)
	}
	p.Binds = append(p.Binds, ip.Binds...)
	if !strings.Contains(interp, "/") && len(ip.Binds) > 0 {
		p.PATH = append(p.PATH, filepath.Dir(ip.Path))
	}
	return p, nil
}

// locate finds program (a name, or an absolute path) where a sandbox sees
// it: on its PATH or in a read-only path as it is; under the user's home
// at its real path, with its install directory to bind.
func locate(program string, readOnly []string) (agentProgram, error) {
	candidates := []string{program}
	if !filepath.IsAbs(program) {
		candidates = nil
		for _, dir := range filepath.SplitList(bwrap.AgentPATH) {
			candidates = append(candidates, filepath.Join(dir, program))
		}
	}
	for _, c := range candidates {
		if executable(c) && bwrap.Visible(c, readOnly) {
			return agentProgram{Path: c}, nil
		}
	}
	found, err := exec.LookPath(program)
	if err != nil {
		return agentProgram{}, fmt.Errorf("is not installed (a sandboxed lease looks in %s, policy's read_only paths, and your PATH under your home)", bwrap.AgentPATH)
	}
	real, err := filepath.EvalSymlinks(found)
	if err != nil {
		return agentProgram{}, fmt.Errorf("is installed at %s, which does not resolve: %v", found, err)
	}
	if bwrap.Visible(real, readOnly) {
		return agentProgram{Path: real, ByPath: true}, nil
	}
	home, _ := os.UserHomeDir()
	if home == "" || !strings.HasPrefix(real, home+"/") {
		return agentProgram{}, fmt.Errorf("is installed at %s, which a sandboxed lease cannot see: install it system-wide (under /usr/local or /opt), or add its directory to the preset's read_only in trusted policy", real)
	}
	dir := installDir(real)
	if dir == home {
		return agentProgram{}, fmt.Errorf("is installed at %s, directly in your home, which a lease never binds: move it into a directory of its own", real)
	}
	return agentProgram{Path: real, ByPath: true, Binds: []string{dir}}, nil
}

// installDir is the narrowest directory that holds a program installed
// under the home with what it needs: the npm package it belongs to (the
// outermost node_modules/NAME or node_modules/@SCOPE/NAME, whose own
// node_modules hold its dependencies), the Python virtual environment
// (the directory with pyvenv.cfg: pipx, uv tool), or else the directory it
// lies in (a native binary: Claude Code's installer, nvm's node, cargo).
func installDir(real string) string {
	parts := strings.Split(real, "/")
	for i, part := range parts[:len(parts)-1] {
		if part != "node_modules" || i+1 >= len(parts)-1 {
			continue
		}
		end := i + 2
		if strings.HasPrefix(parts[i+1], "@") && end < len(parts)-1 {
			end++
		}
		return strings.Join(parts[:end], "/")
	}
	for d := filepath.Dir(real); d != "/"; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "pyvenv.cfg")); err == nil {
			return d
		}
	}
	return filepath.Dir(real)
}

// interpreter returns the program that a script's #! line names (the
// argument of env, as in "#!/usr/bin/env node" or "#!/usr/bin/env -S node
// --flag"), or "" for a file without one.
func interpreter(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	head := make([]byte, 256)
	n, _ := io.ReadFull(f, head)
	line, _, _ := bytes.Cut(head[:n], []byte("\n"))
	if !bytes.HasPrefix(line, []byte("#!")) {
		return "", nil
	}
	fields := strings.Fields(string(line[2:]))
	if len(fields) == 0 {
		return "", nil
	}
	if filepath.Base(fields[0]) != "env" {
		return fields[0], nil
	}
	for _, f := range fields[1:] {
		if !strings.HasPrefix(f, "-") && !strings.Contains(f, "=") {
			return f, nil
		}
	}
	return "", nil
}

func executable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
