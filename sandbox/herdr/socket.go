package herdr

import (
	"fmt"
	"os"
	"path/filepath"
)

// Environment variables Herdr reads to choose its socket.
const (
	EnvSocketPath = "HERDR_SOCKET_PATH"
	EnvSession    = "HERDR_SESSION"
)

// defaultSession names the unnamed session, whose socket sits directly in
// the config directory.
const defaultSession = "default"

// Locate returns the socket of the Herdr server that `herdr --session
// session` would talk to, resolved exactly as Herdr 0.8.2 does: an explicit
// session name, else HERDR_SOCKET_PATH, else HERDR_SESSION, else the default
// session. session "" means none was given; "default" names the default
// session. Named sessions live at <config>/sessions/<name>/herdr.sock and
// the default at <config>/herdr.sock, where <config> is
// $XDG_CONFIG_HOME/herdr, else $HOME/.config/herdr, else $TMPDIR/herdr.
//
// Locate only computes a path; it does not check that a server listens
// there (Ping does). An invalid session name, from the argument or from
// HERDR_SESSION, is an error, as it is for herdr. Locate is pure and
// idempotent.
func Locate(session string) (string, error) {
	return locate(session, os.LookupEnv)
}

func locate(session string, env func(string) (string, bool)) (string, error) {
	if session != "" {
		return sessionSocket(session, env)
	}
	if path, ok := env(EnvSocketPath); ok {
		if path == "" {
			return "", fmt.Errorf("%s is set but empty: unset it or point it at herdr's socket", EnvSocketPath)
		}
		return path, nil
	}
	if name, ok := env(EnvSession); ok {
		path, err := sessionSocket(name, env)
		if err != nil {
			return "", fmt.Errorf("%s: %w", EnvSession, err)
		}
		return path, nil
	}
	return filepath.Join(configDir(env), "herdr.sock"), nil
}

func sessionSocket(name string, env func(string) (string, bool)) (string, error) {
	if name == defaultSession {
		return filepath.Join(configDir(env), "herdr.sock"), nil
	}
	if err := validSessionName(name); err != nil {
		return "", err
	}
	return filepath.Join(configDir(env), "sessions", name, "herdr.sock"), nil
}

// validSessionName applies herdr's rules for session names.
func validSessionName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("herdr session name is empty: name a session or unset %s", EnvSession)
	case len(name) > 64:
		return fmt.Errorf("herdr session name %.20q… is longer than 64 bytes", name)
	case name == "." || name == "..":
		return fmt.Errorf("herdr session name cannot be %q", name)
	}
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
		if !ok {
			return fmt.Errorf("herdr session name %q may only contain ASCII letters, digits, '.', '_' and '-'", name)
		}
	}
	return nil
}

// configDir is herdr's config directory. Like herdr, it takes a variable
// that is set but empty as given.
func configDir(env func(string) (string, bool)) string {
	if dir, ok := env("XDG_CONFIG_HOME"); ok {
		return filepath.Join(dir, "herdr")
	}
	if home, ok := env("HOME"); ok {
		return filepath.Join(home, ".config", "herdr")
	}
	tmp, ok := env("TMPDIR")
	if !ok {
		tmp = "/tmp"
	}
	return filepath.Join(tmp, "herdr")
}
