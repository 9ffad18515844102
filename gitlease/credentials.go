package gitlease

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-lease/git-lease/gitlease/policy"
	"github.com/git-lease/git-lease/sandbox"
)

// CredentialRecord is what a lease records of a credential its agent
// received: never the value.
type CredentialRecord struct {
	Name string `json:"name"`
	// Kind is "env" (passed as the variable Name) or "file" (a copy of a
	// host file; the variable Name holds its path in the sandbox).
	Kind string `json:"kind"`
	// Fingerprint identifies the value without revealing it: the first 16
	// hex digits of its sha256 (enough to tell which key a lease used).
	Fingerprint string `json:"fingerprint"`
}

// credential is a credential's value, held only while the agent runs.
type credential struct {
	CredentialRecord
	value []byte
}

// Where credentials live: a lease's own copies of credential files on the
// host (removed when the agent ends, and at cleanup), and the path at which
// the agent sees them.
const (
	credentialsDir        = "credentials"
	credentialsInSandbox  = "/run/lease/credentials"
	maxCredentialFileSize = 1 << 20
)

// resolveCredentials reads the values of the policy's credentials from the
// host: the file trusted policy names for it in [credential_files], else
// the environment variable of that name.
func resolveCredentials(e *policy.Effective) ([]credential, error) {
	var out []credential
	for _, name := range e.Credentials {
		c := credential{CredentialRecord: CredentialRecord{Name: name, Kind: "env"}}
		if path, ok := e.CredentialFiles[name]; ok {
			b, err := readCredentialFile(policy.ExpandHome(path))
			if err != nil {
				return nil, fmt.Errorf("credential %s: %w", name, err)
			}
			c.Kind, c.value = "file", b
		} else {
			v, ok := os.LookupEnv(name)
			if !ok || v == "" {
				return nil, fmt.Errorf("credential %s: the environment variable %s is not set: set it, or name a file for it under [credential_files] in your trusted policy", name, name)
			}
			c.value = []byte(v)
		}
		sum := sha256.Sum256(c.value)
		c.Fingerprint = "sha256:" + hex.EncodeToString(sum[:8])
		out = append(out, c)
	}
	return out, nil
}

func readCredentialFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxCredentialFileSize+1))
	switch {
	case err != nil:
		return nil, err
	case len(b) > maxCredentialFileSize:
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxCredentialFileSize)
	case len(b) == 0:
		return nil, fmt.Errorf("%s is empty", path)
	}
	return b, nil
}

// deliverCredentials writes the lease's own copy of each file credential
// (mode 0400 in a 0700 directory of the run directory) and returns the
// agent's environment and the files to show it.
func (x *Execution) deliverCredentials(creds []credential) ([]string, []sandbox.Bind, error) {
	var env []string
	var files []sandbox.Bind
	dir := filepath.Join(x.RunDir(), credentialsDir)
	for _, c := range creds {
		if c.Kind == "env" {
			env = append(env, c.Name+"="+string(c.value))
			continue
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, nil, err
		}
		host := filepath.Join(dir, c.Name)
		os.Remove(host)
		if err := os.WriteFile(host, c.value, 0o400); err != nil {
			return nil, nil, err
		}
		inside := credentialsInSandbox + "/" + c.Name
		files = append(files, sandbox.Bind{Host: host, Sandbox: inside})
		env = append(env, c.Name+"="+inside)
	}
	return env, files, nil
}

// removeCredentialFiles removes the lease's copies of its credential files
// and says which credentials they held, for the cleanup receipt; ok is
// false when the lease had none.
func (x *Execution) removeCredentialFiles() (item CleanupItem, ok bool) {
	var names []string
	for _, c := range x.Lease.Credentials {
		if c.Kind == "file" {
			names = append(names, c.Name)
		}
	}
	if len(names) == 0 {
		return CleanupItem{}, false
	}
	item = CleanupItem{Resource: "credential-files", Action: ActionAbsent, Detail: strings.Join(names, ", ")}
	dir := filepath.Join(x.RunDir(), credentialsDir)
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		item.Detail += " (removed when the agent ended)"
		return item, true
	}
	if err := os.RemoveAll(dir); err != nil {
		item.Action, item.Detail = ActionFailed, err.Error()
		return item, true
	}
	item.Action = ActionRemoved
	return item, true
}

// redactor replaces credential values in evidence the lease log keeps (the
// agent's output, network events): a key the agent prints by accident does
// not reach the pushed log. An agent that means to leak its key can encode
// it; the key is its lease's to use.
type redactor []credential

func (r redactor) bytes(b []byte) []byte {
	for _, s := range r.secrets() {
		b = bytes.ReplaceAll(b, s.value, []byte("[credential "+s.name+"]"))
	}
	return b
}

// secret is a value redacted and looked for: a credential's value as is,
// or without the white space around it (a key file's final newline).
type secret struct {
	name  string
	value []byte
}

func (r redactor) secrets() []secret {
	var out []secret
	for _, c := range r {
		for _, v := range [][]byte{c.value, bytes.TrimSpace(c.value)} {
			if len(v) >= minRedacted {
				out = append(out, secret{c.Name, v})
			}
		}
	}
	return out
}

// foundIn returns the name of a credential whose value rd holds, or "".
// It reads rd in chunks, keeping enough of each to find a value that
// spans two.
func (r redactor) foundIn(rd io.Reader) (string, error) {
	secrets := r.secrets()
	longest := 0
	for _, s := range secrets {
		longest = max(longest, len(s.value))
	}
	if longest == 0 {
		return "", nil
	}
	chunk := make([]byte, 64<<10)
	var window []byte
	for {
		n, err := rd.Read(chunk)
		window = append(window, chunk[:n]...)
		for _, s := range secrets {
			if bytes.Contains(window, s.value) {
				return s.name, nil
			}
		}
		if err == io.EOF {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		if keep := longest - 1; len(window) > keep {
			window = append(window[:0], window[len(window)-keep:]...)
		}
	}
}

// minRedacted is the shortest value redacted: replacing a shorter one
// everywhere would mangle the evidence and hide next to nothing.
const minRedacted = 4

func (r redactor) string(s string) string { return string(r.bytes([]byte(s))) }
