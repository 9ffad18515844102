package refs_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/git-lease/git-lease/refs/refstest"
)

// An export holds exactly what git stores: every file's bytes (no
// filters, no line-ending conversion, whatever .gitattributes says), its
// mode as git checks it out (executable or not, under the umask),
// symlinks as symlinks whatever they point at, submodules as empty
// directories; a file larger than one write takes several.
func TestExportTreeWritesExactlyWhatGitStores(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	repo, dir := openTestRepo(t, map[string]string{
		".gitattributes": "*.txt text eol=crlf\n*.bin filter=never\n",
		"crlf.txt":       "one\r\ntwo\n",
		"blob.bin":       "\x00\x01\xff\r\n",
		"empty":          "",
		"d/e/run.sh":     "#!/bin/sh\necho hi\n",
		"d/out":          "->../../../outside",
		"d/abs":          "->/etc/passwd",
		"big":            string(big),
	})
	refstest.Git(t, dir, "update-index", "--chmod=+x", "d/e/run.sh")
	refstest.Git(t, dir, "update-index", "--add", "--cacheinfo", "160000,"+strings.Repeat("ab", 20)+",sub")
	refstest.Git(t, dir, "commit", "-q", "-m", "modes")
	head, err := repo.ResolveCommit("HEAD")
	if err != nil {
		t.Fatal(err)
	}
	c, err := repo.Commit(head)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "tree")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := repo.ExportTree(c.TreeHash, out); err != nil {
		t.Fatal(err)
	}
	umask := syscall.Umask(0)
	syscall.Umask(umask)
	listed := strings.Split(strings.TrimSpace(refstest.Git(t, dir, "ls-tree", "-r", "--format=%(objectmode) %(objectname) %(path)", c.TreeHash.String())), "\n")
	if len(listed) != 9 {
		t.Fatalf("ls-tree: %q", listed)
	}
	for _, line := range listed {
		f := strings.SplitN(line, " ", 3)
		mode, hash, p := f[0], f[1], f[2]
		fi, err := os.Lstat(filepath.Join(out, p))
		if err != nil {
			t.Fatal(err)
		}
		if mode == "160000" {
			if entries, err := os.ReadDir(filepath.Join(out, p)); !fi.IsDir() || err != nil || len(entries) != 0 {
				t.Fatalf("%s: a submodule is not an empty directory: %v %v", p, fi.Mode(), err)
			}
			continue
		}
		cat := exec.Command("git", "cat-file", "blob", hash)
		cat.Dir, cat.Env = dir, append(os.Environ(), refstest.Env...)
		want, err := cat.Output()
		if err != nil {
			t.Fatal(err)
		}
		var got []byte
		switch mode {
		case "120000":
			if fi.Mode()&os.ModeSymlink == 0 {
				t.Fatalf("%s: %v, not a symlink", p, fi.Mode())
			}
			target, err := os.Readlink(filepath.Join(out, p))
			if err != nil {
				t.Fatal(err)
			}
			got = []byte(target)
		default:
			perm := os.FileMode(0o644)
			if mode == "100755" {
				perm = 0o755
			}
			if fi.Mode() != perm&^os.FileMode(umask) {
				t.Fatalf("%s: mode %v, want %v", p, fi.Mode(), perm&^os.FileMode(umask))
			}
			if got, err = os.ReadFile(filepath.Join(out, p)); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes differ from git's %d", p, len(got), len(want))
		}
	}
}
