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
// the command that lifts it; root is refused only by max_user_namespaces,
// and Ubuntu's AppArmor restriction only an unconfined git-lease (a
// profile for it may allow user namespaces).
func TestUserNamespaceRefusals(t *testing.T) {
	const label = "self/attr/apparmor/current"
	for _, tc := range []struct {
		files map[string]string
		uid   int
		want  string
	}{
		{map[string]string{"sys/kernel/unprivileged_userns_clone": "0"}, 1000, "kernel.unprivileged_userns_clone=1"},
		{map[string]string{"sys/kernel/unprivileged_userns_clone": "0"}, 0, ""},
		{map[string]string{"sys/kernel/unprivileged_userns_clone": "1"}, 1000, ""},
		{map[string]string{"sys/user/max_user_namespaces": "0"}, 0, "user.max_user_namespaces=15000"},
		{map[string]string{"sys/kernel/apparmor_restrict_unprivileged_userns": "1", label: "unconfined"}, 1000, "kernel.apparmor_restrict_unprivileged_userns=0"},
		{map[string]string{"sys/kernel/apparmor_restrict_unprivileged_userns": "1", label: "git-lease (unconfined)"}, 1000, ""},
		{map[string]string{"sys/kernel/apparmor_restrict_unprivileged_userns": "1", label: "unconfined"}, 0, ""},
		{map[string]string{"sys/kernel/apparmor_restrict_unprivileged_userns": "0", label: "unconfined"}, 1000, ""},
	} {
		dir := t.TempDir()
		for name, value := range tc.files {
			path := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(value+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		err := checkUserNamespaces(dir, tc.uid)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v for uid %d: %v", tc.files, tc.uid, err)
		case tc.want != "" && (!errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v for uid %d: %v, want an error naming %s", tc.files, tc.uid, err, tc.want)
		}
	}
}
