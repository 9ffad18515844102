package verify

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startAgent runs a private ssh-agent in the foreground for the test and
// returns its socket; the agent is killed when the test ends.
func startAgent(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("ssh-agent"); err != nil {
		t.Skip("ssh-agent is not installed")
	}
	dir, err := os.MkdirTemp("", "agent") // short: socket paths are limited to ~100 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "sock")
	agent := exec.Command("ssh-agent", "-D", "-a", sock)
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		agent.Process.Kill()
		agent.Wait()
	})
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			return sock
		}
		if time.Now().After(deadline) {
			t.Fatal("ssh-agent did not create its socket")
		}
	}
}

func sshAdd(t *testing.T, sock, key string) {
	t.Helper()
	cmd := exec.Command("ssh-add", key)
	cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ssh-add: %v\n%s", err, out)
	}
}

func TestSignWithAgent(t *testing.T) {
	sock := startAgent(t)
	key := newKeyFile(t, "ed25519")
	sshAdd(t, sock, key)
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	// Only the public key is known: the private key file is gone.
	if err := os.Remove(key); err != nil {
		t.Fatal(err)
	}
	literal := strings.TrimSpace(string(pub))
	for name, signingKey := range map[string]string{
		"public key file":         key + ".pub",
		"key:: literal":           "key::" + literal,
		"ssh- literal":            literal,
		"literal without comment": "key::" + strings.Join(strings.Fields(literal)[:2], " "),
	} {
		t.Run(name, func(t *testing.T) {
			s, err := LoadSigner(SignerConfig{Format: "ssh", SigningKey: signingKey, AgentSocket: sock})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(s.String(), "ssh-agent at "+sock) {
				t.Errorf("String() = %q, want it to name the agent", s)
			}
			checkRoundTrip(t, s)
		})
	}
}

func TestLoadSignerAgentErrors(t *testing.T) {
	sock := startAgent(t)
	key := newKeyFile(t, "ed25519")
	tests := []struct {
		name, socket, want string
	}{
		{"no agent socket", "", "SSH_AUTH_SOCK is not set"},
		{"agent without the key", sock, "does not hold key"},
		{"no agent at the socket", filepath.Join(t.TempDir(), "none"), "is it running?"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadSigner(SignerConfig{Format: "ssh", SigningKey: key + ".pub", AgentSocket: tt.socket})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("LoadSigner = %v, want an error saying %q", err, tt.want)
			}
		})
	}
	// The agent is asked at signing time too: a key removed since loading fails.
	sshAdd(t, sock, key)
	s, err := LoadSigner(SignerConfig{Format: "ssh", SigningKey: key + ".pub", AgentSocket: sock})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ssh-add", "-D")
	cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ssh-add -D: %v\n%s", err, out)
	}
	if _, err := Sign(s, testStatement(t, PredicateResult)); err == nil || errors.Is(err, ErrBadStatement) {
		t.Fatalf("Sign after ssh-add -D = %v, want an agent error", err)
	}
}
