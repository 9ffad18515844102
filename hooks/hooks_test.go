package hooks_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lease/git-lease/hooks"
	"github.com/git-lease/git-lease/refs/refstest"
)

// fakeLease writes a stand-in for git-lease that appends its arguments and
// input to a log and refuses any input that mentions "deny". It needs no
// PATH. It returns the program and a function that reads the log.
func fakeLease(t *testing.T) (string, func() string) {
	t.Helper()
	dir := t.TempDir()
	return writeScript(t, filepath.Join(dir, "git-lease"), filepath.Join(dir, "calls.log"), "deny")
}

// writeScript writes an executable at path that appends "argv: <args>" and
// its input to logPath, and fails, saying so on stderr, when the input
// contains refuse.
func writeScript(t *testing.T, path, logPath, refuse string) (string, func() string) {
	t.Helper()
	body := `#!/bin/sh
in=$(command -p cat)
printf 'argv: %s\n%s\n' "$*" "$in" >>'` + logPath + `'
case $in in *` + refuse + `*) echo "$0: refusing $*" >&2; exit 1 ;; esac
`
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path, func() string {
		b, _ := os.ReadFile(logPath)
		return string(b)
	}
}

// git runs git in dir with the test's pinned environment plus env and
// returns its combined output and error.
func git(dir string, env []string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), refstest.Env...), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func install(t *testing.T, opts hooks.Options) *hooks.Installed {
	t.Helper()
	inst, err := hooks.Install(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLocalHookRunsTheCommandOnEveryRefUpdate(t *testing.T) {
	dir := refstest.Repo(t, map[string]string{"a": "1"})
	head := refstest.Git(t, dir, "rev-parse", "HEAD")
	fake, calls := fakeLease(t)
	inst := install(t, hooks.Options{GitDir: filepath.Join(dir, ".git"), Command: fake})
	if inst.Hook != filepath.Join(dir, ".git", "hooks", "reference-transaction") || inst.Chained != "" || !inst.Changed {
		t.Fatalf("Installed = %+v", inst)
	}
	if out, err := git(dir, nil, "update-ref", "refs/leases/0123456789ab", head); err != nil {
		t.Fatalf("allowed update: %v\n%s", err, out)
	}
	line := "0000000000000000000000000000000000000000 " + head + " refs/leases/0123456789ab"
	for _, want := range []string{"argv: hook reference-transaction prepared\n" + line, "argv: hook reference-transaction committed\n" + line} {
		if !strings.Contains(calls(), want) {
			t.Fatalf("the command was not run as %q; it saw:\n%s", want, calls())
		}
	}
	tmp := t.TempDir()
	out, err := git(dir, []string{"TMPDIR=" + tmp}, "update-ref", "refs/leases/deny", head)
	if err == nil || !strings.Contains(out, "refusing hook reference-transaction prepared") {
		t.Fatalf("refused update: %v\n%s", err, out)
	}
	if got, _ := git(dir, nil, "for-each-ref", "refs/leases/deny"); got != "" {
		t.Fatalf("git wrote the refused ref: %s", got)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Fatalf("the hook left its input file behind: %v", left)
	}
	// Only the prepared state can refuse; the others always succeed.
	for state, wantErr := range map[string]bool{"prepared": true, "committed": false, "aborted": false} {
		cmd := exec.Command(inst.Hook, state)
		cmd.Stdin = strings.NewReader("x y refs/leases/deny\n")
		if err := cmd.Run(); (err != nil) != wantErr {
			t.Errorf("hook in state %s with a refusing command: %v", state, err)
		}
	}
}

func TestServerHookRejectsAPushWithItsMessage(t *testing.T) {
	refstest.Setenv(t)
	server := filepath.Join(t.TempDir(), "server.git")
	refstest.Git(t, "", "init", "-q", "--bare", server)
	fake, calls := fakeLease(t)
	inst := install(t, hooks.Options{GitDir: server, Server: true, Command: fake})
	if filepath.Base(inst.Hook) != "pre-receive" {
		t.Fatalf("server hook: %s", inst.Hook)
	}
	dir := refstest.Repo(t, map[string]string{"a": "1"})
	if out, err := git(dir, nil, "push", "-q", server, "main"); err != nil {
		t.Fatalf("allowed push: %v\n%s", err, out)
	}
	if !strings.Contains(calls(), "argv: hook pre-receive\n0000000000000000000000000000000000000000 ") {
		t.Fatalf("pre-receive saw:\n%s", calls())
	}
	out, err := git(dir, nil, "push", server, "main:refs/leases/deny")
	if err == nil || !strings.Contains(out, "remote: "+fake+": refusing hook pre-receive") || !strings.Contains(out, "pre-receive hook declined") {
		t.Fatalf("refused push: %v\n%s", err, out)
	}
	if got := refstest.Git(t, server, "for-each-ref", "refs/leases/"); got != "" {
		t.Fatalf("the server took a refused ref: %s", got)
	}
}

func TestAnExistingHookIsChainedAndStillDecides(t *testing.T) {
	dir := refstest.Repo(t, map[string]string{"a": "1"})
	gitDir := filepath.Join(dir, ".git")
	hookPath := filepath.Join(gitDir, "hooks", "reference-transaction")
	_, chainedCalls := writeScript(t, hookPath, filepath.Join(t.TempDir(), "chained.log"), "chainfail")
	original := read(t, hookPath)
	fake, calls := fakeLease(t)
	inst := install(t, hooks.Options{GitDir: gitDir, Command: fake})
	if inst.Chained != hookPath+".chained" || read(t, inst.Chained) != original {
		t.Fatalf("Installed = %+v; the old hook was not kept as it was", inst)
	}
	out, err := git(dir, nil, "update-ref", "refs/heads/chainfail", "HEAD")
	if err == nil || !strings.Contains(out, "refusing prepared") {
		t.Fatalf("update the chained hook refuses: %v\n%s", err, out)
	}
	for _, log := range []string{chainedCalls(), calls()} {
		if !strings.Contains(log, " refs/heads/chainfail") || !strings.Contains(log, "prepared") {
			t.Fatalf("both hooks should have seen the update with its state:\n%s", log)
		}
	}
	if out, err := git(dir, nil, "update-ref", "refs/heads/fine", "HEAD"); err != nil {
		t.Fatalf("allowed update: %v\n%s", err, out)
	}
	if !strings.Contains(chainedCalls(), "argv: committed\n") || !strings.Contains(calls(), "argv: hook reference-transaction committed\n") {
		t.Fatalf("committed state not passed on:\n%s\n%s", chainedCalls(), calls())
	}
}

func TestInstallIsIdempotentAndUninstallRestores(t *testing.T) {
	ctx := context.Background()
	dir := refstest.Repo(t, map[string]string{"a": "1"})
	gitDir := filepath.Join(dir, ".git")
	hookPath := filepath.Join(gitDir, "hooks", "reference-transaction")
	writeScript(t, hookPath, filepath.Join(t.TempDir(), "chained.log"), "chainfail")
	original := read(t, hookPath)
	opts := hooks.Options{GitDir: gitDir, Command: "git-lease"}
	first := install(t, opts)
	ours := read(t, hookPath)
	if again := install(t, opts); again.Changed || again.Chained != first.Chained || read(t, hookPath) != ours || read(t, first.Chained) != original {
		t.Fatalf("second install: %+v", again)
	}
	opts.Command = "/opt/git-lease/bin/git-lease"
	if moved := install(t, opts); !moved.Changed || read(t, first.Chained) != original || !strings.Contains(read(t, hookPath), "'/opt/git-lease/bin/git-lease'") {
		t.Fatalf("install with another command: %+v", moved)
	}
	for i := 0; i < 2; i++ {
		if err := hooks.Uninstall(ctx, opts); err != nil {
			t.Fatal(err)
		}
		if read(t, hookPath) != original {
			t.Fatalf("uninstall %d did not restore the original hook", i+1)
		}
		if _, err := os.Lstat(first.Chained); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("uninstall %d left %s", i+1, first.Chained)
		}
	}

	fresh := refstest.Repo(t, map[string]string{"a": "1"})
	opts.GitDir = filepath.Join(fresh, ".git")
	install(t, opts)
	if err := hooks.Uninstall(ctx, opts); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(opts.GitDir, "hooks", "reference-transaction")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("uninstall left a hook where there was none: %v", err)
	}
}

func TestInstallRefusesWhatCouldLoseAHook(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		setup func(hook string)
		want  error
	}{
		{"a hook that is not executable", func(hook string) { os.WriteFile(hook, []byte("#!/bin/sh\n"), 0o644) }, hooks.ErrNotExecutable},
		{"a directory where the hook goes", func(hook string) { os.Mkdir(hook, 0o755) }, hooks.ErrNotExecutable},
		{"a dangling link", func(hook string) { os.Symlink("/nonexistent/hook", hook) }, hooks.ErrNotExecutable},
		{"a different chained hook", func(hook string) {
			os.WriteFile(hook, []byte("#!/bin/sh\necho mine\n"), 0o755)
			os.WriteFile(hook+".chained", []byte("#!/bin/sh\necho older\n"), 0o755)
		}, hooks.ErrChainedExists},
	} {
		t.Run(c.name, func(t *testing.T) {
			hooksDir := t.TempDir()
			hook := filepath.Join(hooksDir, "pre-receive")
			c.setup(hook)
			before, _ := os.ReadFile(hook)
			_, err := hooks.Install(ctx, hooks.Options{HooksDir: hooksDir, Server: true, Command: "git-lease"})
			if !errors.Is(err, c.want) {
				t.Fatalf("Install = %v, want %v", err, c.want)
			}
			if after, _ := os.ReadFile(hook); string(after) != string(before) {
				t.Fatalf("the hook changed although Install refused")
			}
		})
	}
	for _, opts := range []hooks.Options{
		{HooksDir: t.TempDir(), Command: ""},
		{HooksDir: t.TempDir(), Command: "bin/git-lease"},
		{HooksDir: t.TempDir(), Command: "git-lease\nrm -rf ~"},
		{HooksDir: "relative/hooks", Command: "git-lease"},
	} {
		if _, err := hooks.Install(ctx, opts); err == nil {
			t.Errorf("Install(%+v) succeeded", opts)
		}
	}
}

func TestHookHonoursHooksPathAndNeedsNoPATH(t *testing.T) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	dir := refstest.Repo(t, map[string]string{"a": "1"})
	hooksDir := filepath.Join(t.TempDir(), "shared hooks; 'quoted'")
	refstest.Git(t, dir, "config", "core.hooksPath", hooksDir)
	fake, calls := fakeLease(t)
	install(t, hooks.Options{GitDir: filepath.Join(dir, ".git"), HooksDir: hooksDir, Command: fake})
	run := func(ref string) (string, error) {
		cmd := exec.Command(gitPath, "update-ref", ref, "HEAD")
		cmd.Dir = dir
		cmd.Env = append(append(os.Environ(), refstest.Env...), "PATH=/nonexistent")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run("refs/leases/deny"); err == nil {
		t.Fatalf("refused update went through:\n%s", out)
	}
	if out, err := run("refs/leases/ok"); err != nil || !strings.Contains(calls(), " refs/leases/ok") {
		t.Fatalf("allowed update: %v\n%s\n%s", err, out, calls())
	}
}
