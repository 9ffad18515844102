package gitlease

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/refs/refstest"
)

func randomSecret(t *testing.T) string {
	b := make([]byte, 24)
	rand.Read(b)
	return "secret-" + hex.EncodeToString(b)
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// credentialRepo is a sandbox repository whose trusted policy allows two
// random credentials: GITLEASE_TEST_TOKEN in the environment (token) and
// GITLEASE_TEST_KEY in a file (key and a newline).
func credentialRepo(t *testing.T) (repo *refs.Repo, dir, token, key string) {
	token, key = randomSecret(t), randomSecret(t)
	keyFile := filepath.Join(t.TempDir(), "key.txt")
	must(t, os.WriteFile(keyFile, []byte(key+"\n"), 0o600))
	t.Setenv("GITLEASE_TEST_TOKEN", token)
	trustedTOML := "credentials = [\"GITLEASE_TEST_TOKEN\", \"GITLEASE_TEST_KEY\"]\n[credential_files]\nGITLEASE_TEST_KEY = \"" + keyFile + "\"\n"
	repo, dir = sandboxRepo(t, map[string]string{"a": "a"}, trustedTOML)
	return repo, dir, token, key
}

// TestSandboxCredentialReachesOnlyItsLease gives one lease a credential in
// an environment variable and one in a file, while a second lease runs
// beside it: only the first agent sees them, neither value reaches the
// log or the pushed refs (the first agent even prints them), and the file
// is gone when the agent ends and after cleanup, which lists it.
func TestSandboxCredentialReachesOnlyItsLease(t *testing.T) {
	repo, dir, token, key := credentialRepo(t)

	first := `printf %s "$GITLEASE_TEST_TOKEN" | sha256sum; tr -d '\n' < "$GITLEASE_TEST_KEY" | sha256sum
echo "by accident: $GITLEASE_TEST_TOKEN $(cat "$GITLEASE_TEST_KEY")"
` + attempt("write-key-file", `echo x > "$GITLEASE_TEST_KEY"`) + "sleep 3\n"
	second := attempt("env", "env | grep -q GITLEASE_TEST") +
		attempt("credentials-dir", "ls /run/lease/credentials") +
		attempt("proc-environ", "cat /proc/[0-9]*/environ | grep -aq GITLEASE_TEST_TOKEN=") +
		attempt("host-copies", "ls "+repo.LeaseDir("runs")+"/*/credentials")

	type run struct {
		x   *Execution
		out string
	}
	done := make(chan run, 1)
	go func() {
		var out bytes.Buffer
		x, err := Start(context.Background(), repo, StartOptions{Mode: Sandboxed, Command: []string{"bash", "-c", first},
			Credentials: []string{"GITLEASE_TEST_TOKEN", "GITLEASE_TEST_KEY"}, Output: &out})
		if err != nil {
			out.WriteString(err.Error())
		}
		done <- run{x, out.String()}
	}()
	waitForCredentialFiles(t, repo)
	other, out2 := runLease(t, repo, StartOptions{}, second)
	requireBlocked(t, out2, "env", "credentials-dir", "proc-environ", "host-copies")
	r := <-done
	if r.x == nil {
		t.Fatalf("the first lease did not start:\n%s", r.out)
	}
	if r.x.Lease.State != Review {
		t.Fatalf("the first lease ended %s (%s):\n%s", r.x.Lease.State, r.x.Lease.Reason, r.out)
	}
	x := r.x
	requireBlocked(t, r.out, "write-key-file")
	if !strings.Contains(r.out, sha256Hex(token)) || !strings.Contains(r.out, sha256Hex(key)) {
		t.Fatalf("the agent did not receive its credentials:\n%s", r.out)
	}
	if len(other.Lease.Credentials) != 0 || len(other.Lease.Policy.Credentials) != 0 {
		t.Fatalf("the second lease records credentials: %+v", other.Lease.Credentials)
	}

	got := x.Lease.Credentials // sorted by name
	if len(got) != 2 || got[0].Name != "GITLEASE_TEST_KEY" || got[0].Kind != "file" || got[1].Kind != "env" ||
		got[0].Fingerprint != "sha256:"+sha256Hex(key + "\n")[:16] || got[1].Fingerprint != "sha256:"+sha256Hex(token)[:16] {
		t.Fatalf("credential records %+v", got)
	}
	stored, err := x.Output()
	if err != nil || !bytes.Contains(stored, []byte("by accident: [credential GITLEASE_TEST_TOKEN] [credential GITLEASE_TEST_KEY]")) {
		t.Fatalf("the stored output is not redacted (%v):\n%s", err, stored)
	}
	copies := filepath.Join(x.RunDir(), credentialsDir)
	if _, err := os.Lstat(copies); err == nil {
		t.Fatalf("%s outlived the agent", copies)
	}

	// A crash would leave the copy behind: cleanup removes it and says so.
	// (The lease's runner, this process, counts as gone, as git lease
	// start would be by then.)
	must(t, os.Remove(filepath.Join(x.RunDir(), "runner.json")))
	must(t, os.MkdirAll(copies, 0o700))
	must(t, os.WriteFile(filepath.Join(copies, "GITLEASE_TEST_KEY"), []byte(key), 0o400))
	c, _, err := CleanupLease(context.Background(), x, CleanupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(c.Receipt, func(item CleanupItem) bool { return item.Resource == "credential-files" })
	if i < 0 || c.Receipt[i].Action != "removed" || c.Receipt[i].Detail != "GITLEASE_TEST_KEY" {
		t.Fatalf("cleanup receipt %+v", c.Receipt)
	}
	if _, err := os.Lstat(filepath.Join(copies, "GITLEASE_TEST_KEY")); err == nil {
		t.Fatal("the credential file survived cleanup")
	}

	bare := filepath.Join(t.TempDir(), "pushed.git")
	refstest.Git(t, dir, "init", "-q", "--bare", bare)
	refstest.Git(t, dir, "push", "-q", bare, "refs/leases/*:refs/leases/*", "refs/heads/lease/*:refs/heads/lease/*")
	for _, repoDir := range []string{dir, bare} {
		for _, secret := range []string{token, key} {
			if objectsContain(t, repoDir, secret) {
				t.Fatalf("a credential value is in a git object of %s", repoDir)
			}
		}
	}
}

// waitForCredentialFiles waits until a lease of repo holds copies of
// credential files: its agent is about to run.
func waitForCredentialFiles(t *testing.T, repo *refs.Repo) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if m, _ := filepath.Glob(repo.LeaseDir("runs", "*", credentialsDir, "*")); len(m) > 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no lease received its credential files")
}

// objectsContain reports whether any object in the repository at dir
// (loose or packed, reachable or not) contains s.
func objectsContain(t *testing.T, dir, s string) bool {
	cmd := exec.Command("git", "-C", dir, "cat-file", "--batch-all-objects", "--batch")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("no objects in %s", dir)
	}
	return bytes.Contains(out, []byte(s))
}

// TestCredentialInTheResultIsQuarantined is an agent that writes its
// credentials into its work: in a file, past a 64 KiB read, in a symlink
// target, in a file name and in a declared artifact. The result is
// quarantined with a finding for each, and no git object of the
// repository, the log included, holds either value.
func TestCredentialInTheResultIsQuarantined(t *testing.T) {
	repo, dir, token, key := credentialRepo(t)
	agent := `echo "TOKEN=$GITLEASE_TEST_TOKEN" > config.env
head -c 65530 /dev/zero | tr '\0' x > big.txt; cat "$GITLEASE_TEST_KEY" >> big.txt
ln -s "$GITLEASE_TEST_TOKEN" link
echo harmless > "name-$GITLEASE_TEST_TOKEN"
echo "report $GITLEASE_TEST_TOKEN" > report.txt
echo clean > clean.txt
`
	var out bytes.Buffer
	x, err := Start(context.Background(), repo, StartOptions{Mode: Sandboxed, Command: []string{"bash", "-c", agent},
		Credentials: []string{"GITLEASE_TEST_TOKEN", "GITLEASE_TEST_KEY"}, Artifacts: []string{"report.txt"}, Output: &out})
	if x == nil || x.Lease.State != Quarantined {
		t.Fatalf("start: %v (want a quarantined lease)\n%s", err, out.String())
	}
	flagged := map[string]string{}
	for _, f := range x.Lease.Findings {
		if f.Rule == RuleCredential {
			flagged[f.Path] = f.Detail
		}
	}
	want := map[string]string{
		"config.env": "GITLEASE_TEST_TOKEN", "big.txt": "GITLEASE_TEST_KEY", "link": "GITLEASE_TEST_TOKEN",
		"name-[credential GITLEASE_TEST_TOKEN]": "GITLEASE_TEST_TOKEN", "report.txt": "GITLEASE_TEST_TOKEN",
	}
	for path, name := range want {
		if flagged[path] != "holds the value of credential "+name {
			t.Errorf("finding for %s: %q, want one naming %s", path, flagged[path], name)
		}
	}
	if len(flagged) != len(want) {
		t.Errorf("credential findings %v, want exactly %v", flagged, want)
	}
	if len(x.Lease.Result.Artifacts) != 0 || x.Lease.Result.Tree != "" {
		t.Errorf("a quarantined result with credentials kept artifacts %v or a tree %s", x.Lease.Result.Artifacts, x.Lease.Result.Tree)
	}
	if branch, _ := repo.Ref(x.Lease.ID.BranchRef()); branch.String() != x.Lease.Base {
		t.Errorf("the review branch moved to %s", branch)
	}
	for _, secret := range []string{token, key} {
		if objectsContain(t, dir, secret) {
			t.Fatalf("a credential value is in a git object of the repository")
		}
	}
}

// foundIn finds a value however the reads split it, its trimmed form too,
// and nothing that is only a part of one.
func TestRedactorFoundIn(t *testing.T) {
	r := redactor{{CredentialRecord: CredentialRecord{Name: "KEY"}, value: []byte("s3cret-value\n")}, {CredentialRecord: CredentialRecord{Name: "TINY"}, value: []byte("abc")}}
	for _, tc := range []struct {
		in, want string
	}{
		{strings.Repeat("x", 70000) + "s3cret-value" + strings.Repeat("y", 10), "KEY"},
		{"key: s3cret-value", "KEY"},
		{"s3cret-valu and abc", ""},
		{"", ""},
	} {
		for _, rd := range []io.Reader{strings.NewReader(tc.in), iotest.OneByteReader(strings.NewReader(tc.in)), iotest.HalfReader(strings.NewReader(tc.in))} {
			got, err := r.foundIn(rd)
			if err != nil || got != tc.want {
				t.Errorf("foundIn(%d bytes ending %q) = %q, %v; want %q", len(tc.in), tc.in[max(0, len(tc.in)-20):], got, err, tc.want)
			}
		}
	}
}
