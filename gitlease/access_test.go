package gitlease

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/git-lease/git-lease/gitlease/policy"
	"github.com/git-lease/git-lease/gitlease/policy/policytest"
	"github.com/git-lease/git-lease/sandbox/bwrap"
)

func TestCredentialsComeOnlyWhenAsked(t *testing.T) {
	trusted := "credentials = [\"GITLEASE_A\", \"GITLEASE_B\"]\n[credential_files]\nGITLEASE_B = \"~/b.key\"\n"
	home := t.TempDir()
	t.Setenv("HOME", home)
	must(t, os.WriteFile(filepath.Join(home, "b.key"), []byte("bee-key"), 0o600))
	eff, err := policytest.ForAgent(t, trusted, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := eff.SelectCredentials(nil); err != nil || len(eff.Credentials) != 0 || eff.Sources["credentials"] != "none asked for" {
		t.Fatalf("unasked: %v %v %q", eff.Credentials, err, eff.Sources["credentials"])
	}
	eff, _ = policytest.ForAgent(t, trusted, "", "")
	if err := eff.SelectCredentials([]string{"GITLEASE_C"}); err == nil || !strings.Contains(err.Error(), "--credential GITLEASE_C") {
		t.Fatalf("a credential policy does not allow: %v", err)
	}
	if err := eff.SelectCredentials([]string{"GITLEASE_A", "GITLEASE_B"}); err != nil {
		t.Fatal(err)
	}
	if _, err := resolveCredentials(eff); err == nil || !strings.Contains(err.Error(), "GITLEASE_A is not set") {
		t.Fatalf("an unset variable: %v", err)
	}
	t.Setenv("GITLEASE_A", "ay-value")
	creds, err := resolveCredentials(eff)
	if err != nil || len(creds) != 2 || creds[0].Kind != "env" || string(creds[1].value) != "bee-key" || creds[1].Kind != "file" {
		t.Fatalf("resolved %+v %v", creds, err)
	}
	unasked, _ := policytest.ForAgent(t, trusted, "", "")
	unasked.SelectCredentials(nil)
	if eff.Digest() == unasked.Digest() {
		t.Fatal("the digest does not cover the credentials' names")
	}
}

func TestFindAgentLooksWhereTheSandboxLooks(t *testing.T) {
	if p, err := findAgent("sh", nil, true); err != nil || !strings.HasSuffix(p.Path, "/sh") || p.ByPath {
		t.Fatalf("sh: %+v %v", p, err)
	}
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "hidden-agent"), []byte("#!/bin/sh\n"), 0o755))
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	if _, err := findAgent("hidden-agent", nil, true); err == nil || !strings.Contains(err.Error(), "cannot see") {
		t.Fatalf("an agent outside the sandbox's view: %v", err)
	}
	if _, err := findAgent(filepath.Join(dir, "hidden-agent"), []string{dir}, true); err != nil {
		t.Fatalf("an agent under a read-only path: %v", err)
	}
	// On your PATH, off the sandbox's, in a directory the sandbox shows:
	// the lease runs it by its path.
	if p, err := findAgent("hidden-agent", []string{dir}, true); err != nil || p.Path != filepath.Join(dir, "hidden-agent") || !p.ByPath {
		t.Fatalf("an agent on your PATH under a read-only path: %+v %v", p, err)
	}
	if _, err := findAgent("hidden-agent", nil, false); err != nil {
		t.Fatalf("trusted_local finds agents on your PATH: %v", err)
	}
	if _, err := findAgent("no-such-agent-anywhere", nil, true); err == nil || !strings.Contains(err.Error(), "not installed") {
		t.Fatalf("got %v", err)
	}
}

func TestAgentsListsPresetsAndInstalls(t *testing.T) {
	repo, _, err := policytest.Repo(t, "[agents.shell]\ncommand = [\"sh\", \"-c\", \"{prompt}\"]\n", "")
	if err != nil {
		t.Fatal(err)
	}
	list, err := Agents(repo)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range list {
		names = append(names, a.Name)
		if a.Name == "shell" && (a.Installed == "" || a.Source != policy.SourceTrusted) {
			t.Fatalf("shell: %+v", a)
		}
		if a.Installed == "" && a.Missing == "" {
			t.Fatalf("%s: neither installed nor missing", a.Name)
		}
	}
	if !slices.Equal(names, []string{"aider", "claude", "codex", "gemini", "opencode", "shell"}) {
		t.Fatalf("presets %v", names)
	}
}

// TestRunnerRebuildsAccessFromTrustedPolicy plays a lease's runner: it
// rebuilds the proxy's allowlist from trusted policy (wildcard limits
// kept), and refuses a credential whose value changed since the start, or
// a destination trusted policy no longer allows.
func TestRunnerRebuildsAccessFromTrustedPolicy(t *testing.T) {
	trusted := "credentials = [\"GITLEASE_A\"]\n[network]\nallow = [\"*.example.org:443\"]\n"
	repo, eff, err := policytest.Repo(t, trusted, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GITLEASE_A", "first-value")
	opts := StartOptions{Command: []string{"true"}, Net: []string{"a.example.org:443"}, Credentials: []string{"GITLEASE_A"}}
	command, records, err := prepareLaunch(eff, opts, true)
	if err != nil {
		t.Fatal(err)
	}
	x := &Execution{Repo: repo, Lease: &Lease{ID: "0123456789ab", Command: command, Policy: eff, Credentials: records}}
	sandboxed := bwrap.Provider{}
	l, err := x.launchFor(sandboxed)
	if err != nil {
		t.Fatal(err)
	}
	if d := l.allow.Check("a.example.org", 443); !d.Allowed || d.Verbatim || len(l.creds) != 1 || string(l.creds[0].value) != "first-value" {
		t.Fatalf("rebuilt allowlist %v (%+v), credentials %+v", l.allow, d, l.creds)
	}
	t.Setenv("GITLEASE_A", "second-value")
	if _, err := x.launchFor(sandboxed); err == nil || !strings.Contains(err.Error(), "changed since the lease started") {
		t.Fatalf("a changed credential: %v", err)
	}
	t.Setenv("GITLEASE_A", "first-value")
	path, _ := policy.TrustedPath(repo)
	must(t, os.WriteFile(path, []byte("credentials = [\"GITLEASE_A\"]\n"), 0o644))
	if _, err := x.launchFor(sandboxed); err == nil || !strings.Contains(err.Error(), "trusted policy changed") {
		t.Fatalf("a destination trusted policy dropped: %v", err)
	}
}

// The lease's sandbox spec carries the seccomp entries policy lets through
// to the provider.
func TestSandboxSpecCarriesTheSeccompAllowance(t *testing.T) {
	repo, eff, err := policytest.Repo(t, "[bwrap]\nseccomp_allow = [\"perf\", \"io_uring\"]\n", "")
	if err != nil {
		t.Fatal(err)
	}
	head, _ := repo.ResolveCommit("HEAD")
	x := &Execution{Repo: repo, Lease: &Lease{ID: "0123456789ab", Base: head.String(), Policy: eff}}
	if got := x.spec().SeccompAllow; !slices.Equal(got, []string{"perf", "io_uring"}) {
		t.Fatalf("the sandbox spec lets %q through", got)
	}
}
