package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// report is Crabbox's timing JSON (the fields the stand-in fills).
type report struct {
	Provider    string `json:"provider"`
	LeaseID     string `json:"leaseId,omitempty"`
	Slug        string `json:"slug,omitempty"`
	SyncMs      int64  `json:"syncMs"`
	SyncSkipped bool   `json:"syncSkipped"`
	CommandMs   int64  `json:"commandMs"`
	TotalMs     int64  `json:"totalMs"`
	EndToEndMs  int64  `json:"endToEndMs"`
	ExitCode    int    `json:"exitCode"`
	RunStatus   string `json:"runStatus,omitempty"`
	ErrorKind   string `json:"errorKind,omitempty"`
	RunID       string `json:"runId,omitempty"`
	RepoPath    string `json:"repoPath,omitempty"`
	Workdir     string `json:"workdir,omitempty"`
	StopCommand string `json:"stopCommand,omitempty"`
}

func runCommand(args []string) *exitError {
	fs := newFlags("run")
	fs.String("provider", "", "")
	id := fs.String("id", "", "")
	stopAfter := fs.String("stop-after", "", "")
	timingJSON := fs.Bool("timing-json", false, "")
	noSync := fs.Bool("no-sync", false, "")
	captureStdout := fs.String("capture-stdout", "", "")
	captureStderr := fs.String("capture-stderr", "", "")
	var allow, profiles stringList
	fs.Var(&allow, "allow-env", "")
	fs.Var(&profiles, "env-from-profile", "")
	if err := parse(fs, args); err != nil {
		return err
	}
	argv := fs.Args()
	if len(argv) == 0 {
		return fail(2, "usage: crabbox run [flags] -- <command...>")
	}
	if *id == "" {
		return fail(2, "the stand-in only runs on an existing lease: pass --id")
	}
	if *stopAfter != "" && *stopAfter != "never" {
		return fail(2, "the stand-in supports --stop-after never only")
	}
	root, err := providerRoot()
	if err != nil {
		return err
	}
	b, err := loadBox(root, *id)
	if err != nil {
		return err
	}
	if knob("VANISH", "") == "run" {
		os.RemoveAll(boxDir(root, b.ID))
		return fail(4, "lease not found: %s", b.ID)
	}
	repo, err := repoRoot()
	if err != nil {
		return err
	}
	started := time.Now()
	remote := path.Join("/work/crabbox", b.ID, filepath.Base(repo))
	workdir := filepath.Join(boxFS(root, b.ID), remote)
	if *noSync {
		// As Crabbox: make the work directory and invalidate its sync
		// fingerprint, nothing else.
		if err := os.MkdirAll(workdir, 0o755); err != nil {
			return fail(7, "create remote workdir: %v", err)
		}
		os.Remove(filepath.Join(workdir, ".crabbox", "sync-fingerprint"))
	} else if err := syncRepo(repo, workdir); err != nil {
		return err
	}
	env, err := remoteEnv(b, allow, profiles, boxFS(root, b.ID))
	if err != nil {
		return err
	}
	syncDone := time.Now()
	stdout, err := capture("stdout", *captureStdout, os.Stdout)
	if err != nil {
		return err
	}
	stderr, err := capture("stderr", *captureStderr, os.Stderr)
	if err != nil {
		return err
	}
	code, kind := execute(argv, workdir, env, stdout, stderr)
	for label, c := range map[string]*os.File{"stdout": stdout, "stderr": stderr} {
		if c != os.Stdout && c != os.Stderr {
			info, _ := c.Stat()
			c.Close()
			fmt.Fprintf(os.Stderr, "captured %s=%s bytes=%d\n", label, map[string]string{"stdout": *captureStdout, "stderr": *captureStderr}[label], info.Size())
		}
	}
	rep := report{
		Provider: b.Provider, LeaseID: b.ID, Slug: b.Slug, SyncMs: syncDone.Sub(started).Milliseconds(),
		SyncSkipped: *noSync, CommandMs: time.Since(syncDone).Milliseconds(), TotalMs: time.Since(started).Milliseconds(),
		EndToEndMs: time.Since(started).Milliseconds(), ExitCode: code, RunStatus: "succeeded", ErrorKind: kind,
		RunID: "run_" + b.ID[4:], RepoPath: repo, Workdir: remote, StopCommand: "crabbox stop " + b.ID,
	}
	switch kind {
	case "command-exit":
		rep.RunStatus = "failed"
	case "timeout":
		rep.RunStatus = "timed-out"
	}
	fmt.Fprintf(os.Stderr, "command complete in %s total=%s\n", time.Since(syncDone).Round(time.Millisecond), time.Since(started).Round(time.Millisecond))
	fmt.Fprintf(os.Stderr, "run details provider=%s lease=%s slug=%s repo=%s workdir=%s\n", b.Provider, b.ID, b.Slug, repo, remote)
	if *timingJSON {
		line, _ := json.Marshal(rep)
		fmt.Fprintf(os.Stderr, "%s\n", line)
	}
	if code != 0 {
		// As Crabbox's writeLocalFailureBundle: a failure bundle lands in
		// .crabbox/captures/ under the local working directory.
		captures := filepath.Join(".crabbox", "captures")
		if os.MkdirAll(captures, 0o700) == nil {
			name := filepath.Join(captures, rep.RunID+"-"+time.Now().UTC().Format("20060102T150405Z")+".tar.gz")
			os.WriteFile(name, []byte("failure bundle\n"), 0o600)
			fmt.Fprintf(os.Stderr, "failure bundle: %s\n", name)
		}
	}
	switch {
	case kind == "timeout":
		return fail(1, "context deadline exceeded")
	case code != 0:
		return fail(code, "remote command exited %d", code)
	}
	return nil
}

// capture opens the local file a remote stream is written to (path, as
// --capture-stdout/--capture-stderr name it), or returns the stand-in's own
// stream (std) when path is empty. As Crabbox, it says so on stderr, and
// replaces whatever is at path with a new private file.
func capture(label, path string, std *os.File) (*os.File, *exitError) {
	if path == "" {
		return std, nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".crabbox-*")
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return nil, fail(2, "capture %s: %v", label, err)
	}
	fmt.Fprintf(os.Stderr, "capturing %s to %s\n", label, path)
	return tmp, nil
}

// execute runs argv in workdir with env, with an empty standard input and
// the remote output on stdout and stderr, and says how it ended.
func execute(argv []string, workdir string, env []string, stdout, stderr *os.File) (code int, errorKind string) {
	ctx := context.Background()
	if d, err := time.ParseDuration(knob("RUN_TIMEOUT", "")); err == nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = workdir, env
	// Crabbox runs the remote command with ssh -n: its standard input is
	// empty, whatever crabbox's own is.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return 124, "timeout"
	case errors.As(err, &exit):
		return exit.ExitCode(), "command-exit"
	case err != nil:
		fmt.Fprintf(os.Stderr, "%v\n", err)
		return 127, "command-exit"
	}
	return 0, ""
}

// remoteEnv is the command's environment: the box's own, Crabbox's
// execution metadata, and the allowlisted names (CI and NODE_OPTIONS by
// default, plus --allow-env) from the local environment or, winning, from
// the env profiles.
//
// The stand-in has no file system namespace: the value of a variable that
// is an absolute path to a file or directory in the box's file system (one
// put there with cp) is given as its path on the host.
func remoteEnv(b box, allow, profiles []string, fsRoot string) ([]string, *exitError) {
	values := map[string]string{}
	allowed := append([]string{"CI", "NODE_OPTIONS"}, allow...)
	for _, name := range allowed {
		if v, ok := os.LookupEnv(name); ok {
			values[name] = v
		}
	}
	for _, p := range profiles {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fail(2, "read env profile %s: %v", p, err)
		}
		for name, v := range parseProfile(data) {
			for _, a := range allowed {
				if a == name {
					values[name] = v
				}
			}
		}
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=/root", "CRABBOX_LEASE_ID=" + b.ID, "CRABBOX_RUN_ID=run_" + b.ID[4:], "CRABBOX_SLUG=" + b.Slug}
	if dockerSocket() {
		// Crabbox mounts the host's Docker socket into the local container:
		// whoever runs in the box is root on the host.
		env = append(env, "DOCKER_HOST=unix:///var/run/docker.sock")
	}
	for name, v := range values {
		if path.IsAbs(v) && path.Clean(v) == v && v != "/" {
			if info, err := os.Lstat(filepath.Join(fsRoot, v)); err == nil && (info.Mode().IsRegular() || info.IsDir()) {
				v = filepath.Join(fsRoot, v)
			}
		}
		env = append(env, name+"="+v)
	}
	return env, nil
}

// dockerSocket is Crabbox's CRABBOX_LOCAL_CONTAINER_DOCKER_SOCKET, which
// (like every CRABBOX_* variable Crabbox reads) overrides the config file.
func dockerSocket() bool {
	v, err := strconv.ParseBool(os.Getenv("CRABBOX_LOCAL_CONTAINER_DOCKER_SOCKET"))
	return err == nil && v
}

// parseProfile reads KEY=value lines; a value in single quotes is taken
// verbatim, as Crabbox's env profile parser does.
func parseProfile(data []byte) map[string]string {
	out := map[string]string{}
	for _, line := range bytes.Split(data, []byte{'\n'}) {
		key, value, ok := strings.Cut(strings.TrimSpace(string(line)), "=")
		if !ok || strings.HasPrefix(key, "#") {
			continue
		}
		if len(value) >= 2 && value[0] == '\'' && value[len(value)-1] == '\'' {
			value = value[1 : len(value)-1]
		}
		out[key] = value
	}
	return out
}

// syncRepo mirrors the repository's tracked and untracked-not-ignored files
// into workdir, replacing what was there.
func syncRepo(repo, workdir string) *exitError {
	cmd := exec.Command("git", "ls-files", "--cached", "--others", "--exclude-standard", "-z")
	cmd.Dir = repo
	out, err := cmd.Output()
	if err != nil {
		return fail(6, "build sync file list: %v", err)
	}
	if err := os.RemoveAll(workdir); err != nil {
		return fail(7, "reset remote workdir: %v", err)
	}
	if err := os.MkdirAll(workdir, 0o755); err != nil {
		return fail(7, "create remote workdir: %v", err)
	}
	ignore := crabboxIgnore(repo)
	var manifest []string
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if name == "" || excluded(name, ignore) {
			continue
		}
		if err := copyEntry(filepath.Join(repo, name), filepath.Join(workdir, name), true); err != nil {
			return fail(6, "rsync failed: %v", err)
		}
		manifest = append(manifest, name)
	}
	return writeSyncState(repo, workdir, manifest)
}

// builtinExcludes are some of the names Crabbox 0bba5f7d leaves out of a
// sync wherever they occur, tracked or not (its list is longer).
var builtinExcludes = []string{
	"node_modules", "dist", "coverage", ".cache", ".tmp", ".local", ".venv", "__pycache__",
	".pytest_cache", ".mypy_cache", ".gradle", "target", ".next", ".turbo",
}

// crabboxIgnore reads the patterns of a .crabboxignore at the top of the
// repository (the stand-in takes each line as a name matched at any
// depth, or a path prefix when it holds a slash).
func crabboxIgnore(repo string) []string {
	data, err := os.ReadFile(filepath.Join(repo, ".crabboxignore"))
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.Trim(strings.TrimSpace(line), "/")
		if line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	return out
}

// excluded reports whether Crabbox's sync leaves name out.
func excluded(name string, ignore []string) bool {
	parts := strings.Split(name, "/")
	for _, pattern := range append(slices.Clone(builtinExcludes), ignore...) {
		if strings.Contains(pattern, "/") {
			if name == pattern || strings.HasPrefix(name, pattern+"/") {
				return true
			}
			continue
		}
		if slices.Contains(parts, pattern) {
			return true
		}
	}
	return false
}

// writeSyncState writes what Crabbox keeps of a sync in .crabbox/ inside
// the box's work directory (as Crabbox 0bba5f7d does): the manifest of
// synced paths (NUL-terminated, as Crabbox writes it), its fingerprint, the finalize tokens and the base commit
// it hydrated git from. A copy of the work directory brings them back.
func writeSyncState(repo, workdir string, manifest []string) *exitError {
	head, _ := exec.Command("git", "-C", repo, "rev-parse", "HEAD").Output()
	meta := filepath.Join(workdir, ".crabbox")
	files := map[string]string{
		"sync-manifest":                strings.Join(manifest, "\x00") + "\x00",
		"sync-fingerprint":             fmt.Sprintf("%x\n", len(manifest)),
		"sync-finalize-token":          "finalize_standin\n",
		"sync-finalize-complete-token": "finalize_standin\n",
		"git-hydrate-base":             string(head),
	}
	if err := os.MkdirAll(meta, 0o755); err != nil {
		return fail(6, "create sync state: %v", err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(meta, name), []byte(data), 0o644); err != nil {
			return fail(6, "write sync state: %v", err)
		}
	}
	return nil
}

// copyEntry copies one file or symlink (keepModes: with its mode; else
// 0644), making parent directories.
func copyEntry(src, dst string, keepModes bool) error {
	info, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if info.Mode()&os.ModeSymlink != 0 {
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	}
	mode := os.FileMode(0o644)
	if keepModes {
		mode = info.Mode().Perm()
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(dst, mode)
}
