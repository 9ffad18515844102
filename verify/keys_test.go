package verify

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInitKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lease", "keys")
	line, err := InitKey(dir, alice)
	if err != nil {
		t.Fatal(err)
	}
	priv := filepath.Join(dir, KeyFile)
	for path, want := range map[string]os.FileMode{dir: 0o700 | os.ModeDir, priv: 0o600, priv + ".pub": 0o644} {
		if fi, err := os.Stat(path); err != nil || fi.Mode() != want {
			t.Errorf("%s: mode %v (%v), want %v", path, fi.Mode(), err, want)
		}
	}
	if !strings.HasPrefix(line, alice+" ssh-ed25519 AAAA") || strings.Count(line, " ") != 2 {
		t.Errorf("line = %q, want %q", line, alice+" ssh-ed25519 AAAA…")
	}
	// OpenSSH reads the private key and derives the same public key.
	out, err := sshKeygen(t, nil, "-y", "-f", priv)
	if f := strings.Fields(out); err != nil || len(f) < 2 || !strings.HasSuffix(line, f[0]+" "+f[1]) {
		t.Errorf("ssh-keygen -y = %q (%v), want the key of %q", out, err, line)
	}
	s, err := LoadSigner(SignerConfig{KeyDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if s.AllowedSignersLine(alice) != line {
		t.Errorf("AllowedSignersLine = %q, want %q", s.AllowedSignersLine(alice), line)
	}

	before, _ := os.ReadFile(priv)
	if _, err := InitKey(dir, alice); !errors.Is(err, ErrKeyExists) || !strings.Contains(err.Error(), "keys show") {
		t.Errorf("second InitKey = %v, want ErrKeyExists saying how to use the key", err)
	}
	if after, _ := os.ReadFile(priv); string(after) != string(before) {
		t.Error("second InitKey changed the key")
	}
	os.Remove(priv)
	if _, err := InitKey(dir, alice); !errors.Is(err, ErrKeyExists) {
		t.Errorf("InitKey with only the .pub left = %v, want ErrKeyExists", err)
	}
}

func TestInitKeyRefusesBadPrincipals(t *testing.T) {
	for _, p := range []string{"", "a b@x", "a,b@x", "*@x", `"a"@x`} {
		if _, err := InitKey(t.TempDir(), p); err == nil {
			t.Errorf("InitKey(%q) succeeded", p)
		}
	}
}

func TestLoadSignerChoosesKey(t *testing.T) {
	keyDir := filepath.Join(t.TempDir(), "keys")
	if _, err := InitKey(keyDir, alice); err != nil {
		t.Fatal(err)
	}
	userKey := newKeyFile(t, "ed25519")
	home := t.TempDir()
	t.Setenv("HOME", home)
	os.Mkdir(filepath.Join(home, ".ssh"), 0o700)
	if err := os.Link(userKey, filepath.Join(home, ".ssh", "id")); err != nil {
		t.Fatal(err)
	}
	openKey := newKeyFile(t, "ed25519")
	os.Chmod(openKey, 0o644)

	tests := []struct {
		name string
		c    SignerConfig
		want string // a part of String(), or of the error
	}{
		{"the git-lease key comes first", SignerConfig{KeyDir: keyDir, Format: "ssh", SigningKey: userKey}, filepath.Join(keyDir, KeyFile)},
		{"the SSH signing key without a git-lease key", SignerConfig{KeyDir: t.TempDir(), Format: "ssh", SigningKey: userKey}, userKey},
		{"a path under ~/", SignerConfig{Format: "ssh", SigningKey: "~/.ssh/id"}, filepath.Join(home, ".ssh", "id")},
		{"no key at all", SignerConfig{KeyDir: t.TempDir()}, "git lease keys init"},
		{"a gpg signing key", SignerConfig{Format: "openpgp", SigningKey: "ABCDEF"}, `gpg.format is "openpgp"`},
		{"a missing key file", SignerConfig{Format: "ssh", SigningKey: userKey + ".gone"}, "no such file"},
		{"a key file readable by others", SignerConfig{Format: "ssh", SigningKey: openKey}, "chmod 600"},
		{"a file that is no key", SignerConfig{Format: "ssh", SigningKey: "/etc/hostname"}, "neither an SSH private key"},
		{"a bad literal key", SignerConfig{Format: "ssh", SigningKey: "key::ssh-ed25519 nope"}, "is not a public key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := LoadSigner(tt.c)
			got := s.String
			if err != nil {
				got = err.Error
			}
			if !strings.Contains(got(), tt.want) {
				t.Errorf("LoadSigner = %q, want it to mention %q", got(), tt.want)
			}
		})
	}
	if _, err := LoadSigner(SignerConfig{}); !errors.Is(err, ErrNoSigningKey) {
		t.Errorf("LoadSigner of nothing = %v, want ErrNoSigningKey", err)
	}
}
