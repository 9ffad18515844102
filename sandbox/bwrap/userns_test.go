package bwrap

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lease/git-lease/sandbox"
)

// Each sysctl that refuses the sandbox its user namespace is named, with
// the command that lifts it; root is refused only by max_user_namespaces.
func TestUserNamespaceRefusals(t *testing.T) {
	for _, tc := range []struct {
		sysctl, value string
		uid           int
		want          string
	}{
		{"kernel/unprivileged_userns_clone", "0", 1000, "kernel.unprivileged_userns_clone=1"},
		{"kernel/unprivileged_userns_clone", "0", 0, ""},
		{"kernel/unprivileged_userns_clone", "1", 1000, ""},
		{"user/max_user_namespaces", "0", 0, "user.max_user_namespaces=15000"},
		{"kernel/apparmor_restrict_unprivileged_userns", "1", 1000, "kernel.apparmor_restrict_unprivileged_userns=0"},
		{"kernel/apparmor_restrict_unprivileged_userns", "1", 0, ""},
		{"kernel/apparmor_restrict_unprivileged_userns", "0", 1000, ""},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, tc.sysctl)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(tc.value+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		err := checkUserNamespaces(dir, tc.uid)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s = %s for uid %d: %v", tc.sysctl, tc.value, tc.uid, err)
		case tc.want != "" && (!errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s = %s for uid %d: %v, want an error naming %s", tc.sysctl, tc.value, tc.uid, err, tc.want)
		}
	}
}
