package refs_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/refs/refstest"
)

// evilDrivers configures, in the test repository's own .git/config, a
// filter, a merge driver and a diff driver that each leave a marker file
// when git runs them, and returns the marker's path.
func evilDrivers(t *testing.T, dir string) string {
	t.Helper()
	marker := filepath.Join(t.TempDir(), "ran")
	touch := "touch " + marker
	for _, kv := range [][2]string{
		{"filter.evil.smudge", touch + "; cat"}, {"filter.evil.clean", touch + "; cat"},
		{"filter.evil.required", "true"}, {"filter.evil2.process", touch},
		{"merge.evil.driver", touch}, {"diff.evil.textconv", touch + "; cat"},
	} {
		refstest.Git(t, dir, "config", kv[0], kv[1])
	}
	return marker
}

// TestMaterializingRunsNoDriver checks out, updates and merges a tree whose
// .gitattributes (at the top and nested) route every file through
// configured drivers that run a program. Through git-lease's git, no
// driver runs, and the files hold the blobs' bytes; the same read-tree run
// as plain git does run the filter, so the test shows what it guards.
// reviewCheckout adds a review worktree on a branch at HEAD and checks it
// out as git-lease materializes a result (read-tree --reset -u), returning
// the worktree and its admin directory.
func reviewCheckout(t *testing.T, repo *refs.Repo, dir string) (wt, admin string) {
	t.Helper()
	ctx := context.Background()
	wt = filepath.Join(t.TempDir(), "wt")
	if _, err := repo.Worktree(ctx, "add", "--quiet", "--no-checkout", "-b", "review", wt, "HEAD"); err != nil {
		t.Fatal(err)
	}
	admin = filepath.Join(dir, ".git", "worktrees", "wt")
	if _, err := repo.GitAt(ctx, admin, []string{"GIT_WORK_TREE=" + wt}, nil, "read-tree", "--reset", "-u", "HEAD"); err != nil {
		t.Fatal(err)
	}
	return wt, admin
}

func TestMaterializingRunsNoDriver(t *testing.T) {
	repo, dir := openTestRepo(t, map[string]string{"a.txt": "base\n"})
	marker := evilDrivers(t, dir)
	refstest.Write(t, dir, map[string]string{
		".gitattributes":     "* filter=evil merge=evil diff=evil\n",
		"sub/.gitattributes": "*.bin filter=evil2\n",
		"sub/x.bin":          "payload\n",
		"a.txt":              "agent\n",
	})
	setup := func(args ...string) {
		refstest.Git(t, dir, append([]string{"-c", "filter.evil.clean=cat", "-c", "filter.evil.smudge=cat", "-c", "filter.evil2.process="}, args...)...)
	}
	setup("add", "-A")
	setup("commit", "-qm", "result")
	os.Remove(marker)
	ctx := context.Background()
	wt, admin := reviewCheckout(t, repo, dir)
	if _, err := repo.GitAt(ctx, admin, []string{"GIT_WORK_TREE=" + wt}, nil, "status", "--porcelain"); err != nil {
		t.Fatal(err)
	}
	// Apply's path on a checkout: a two-tree read-tree from base to result.
	setup("reset", "-q", "--hard", "HEAD~1")
	os.Remove(marker)
	env := []string{"GIT_WORK_TREE=" + dir}
	if _, err := repo.GitAt(ctx, filepath.Join(dir, ".git"), env, nil, "read-tree", "-m", "-u", "HEAD", "review"); err != nil {
		t.Fatal(err)
	}
	// Rebase's path: a merge where both sides changed a.txt.
	setup("checkout", "-q", "-b", "moved", "main")
	refstest.Write(t, dir, map[string]string{"a.txt": "moved\n"})
	setup("commit", "-qam", "moved")
	os.Remove(marker)
	if _, err := repo.Git(ctx, nil, "merge-tree", "--write-tree", "--name-only", "--no-messages", "moved", "review"); err == nil {
		t.Error("merge-tree merged both sides' a.txt with a driver that cannot run; want a conflict")
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a driver ran while git-lease materialized or merged the tree")
	}
	for name, want := range map[string]string{"a.txt": "agent\n", "sub/x.bin": "payload\n"} {
		if b, err := os.ReadFile(filepath.Join(wt, name)); err != nil || string(b) != want {
			t.Errorf("review worktree %s = %q, %v; want the blob's bytes %q", name, b, err, want)
		}
	}

	// The same checkout through plain git runs the filter: what the test guards.
	plain := exec.Command("git", "read-tree", "--reset", "-u", "review")
	plain.Env = append(os.Environ(), "GIT_DIR="+admin, "GIT_WORK_TREE="+wt)
	plain.Dir = admin
	os.Remove(filepath.Join(wt, "a.txt"))
	out, err := plain.CombinedOutput() // fails: "touch" speaks no filter protocol
	if _, serr := os.Stat(marker); serr != nil {
		t.Fatalf("plain git ran no filter (%v, %s): the test's drivers are not configured as it thinks", err, out)
	}
}

// TestMaterializingRunsNoGitLFS is the attack the issue describes, with a
// real git-lfs configured in the test repository alone (git lfs install
// --local): a tree with a nested .gitattributes routing *.bin through lfs
// and a .lfsconfig naming a URL of the tree's choosing. Checked out through
// git-lease's git, nothing contacts that URL and the file holds the
// pointer's bytes; through plain git, git-lfs asks the URL.
func TestMaterializingRunsNoGitLFS(t *testing.T) {
	if _, err := exec.LookPath("git-lfs"); err != nil {
		t.Skip("git-lfs is not installed (scripts/test.sh installs it)")
	}
	asked := make(chan string, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked <- r.Method + " " + r.URL.Path
		http.Error(w, "no", http.StatusNotFound)
	}))
	defer srv.Close()
	repo, dir := openTestRepo(t, map[string]string{"a.txt": "base\n"})
	refstest.Git(t, dir, "lfs", "install", "--local", "--skip-repo")
	pointer := "version https://git-lfs.github.com/spec/v1\noid sha256:" + strings.Repeat("ab", 32) + "\nsize 7\n"
	refstest.Write(t, dir, map[string]string{
		"sub/.gitattributes": "*.bin filter=lfs diff=lfs merge=lfs -text\n",
		".lfsconfig":         "[lfs]\n\turl = " + srv.URL + "/lfs\n",
	})
	refstest.Git(t, dir, "add", "-A")
	// The pointer goes in as the blob itself, as an agent's result would.
	refstest.Write(t, dir, map[string]string{"sub/x.bin": pointer})
	refstest.Git(t, dir, "-c", "filter.lfs.process=", "-c", "filter.lfs.required=false", "add", "sub/x.bin")
	refstest.Git(t, dir, "-c", "filter.lfs.process=", "-c", "filter.lfs.required=false", "commit", "-qm", "result")
	wt, admin := reviewCheckout(t, repo, dir)
	if b, err := os.ReadFile(filepath.Join(wt, "sub", "x.bin")); err != nil || string(b) != pointer {
		t.Errorf("review worktree sub/x.bin = %q, %v; want the pointer's bytes", b, err)
	}
	select {
	case req := <-asked:
		t.Fatalf("materializing the tree made git-lfs ask the tree's URL: %s", req)
	default:
	}

	plain := exec.Command("git", "read-tree", "--reset", "-u", "review")
	plain.Env = append(os.Environ(), "GIT_DIR="+admin, "GIT_WORK_TREE="+wt)
	plain.Dir = wt
	os.Remove(filepath.Join(wt, "sub", "x.bin"))
	out, err := plain.CombinedOutput()
	select {
	case <-asked:
	case <-time.After(10 * time.Second):
		t.Fatalf("plain git with git-lfs asked no URL (%v, %s): the test does not set up what it guards", err, out)
	}
}

// TestNeutralisingOutlastsAnOuterGitC: git lease runs as a git subcommand,
// so an outer "git -c" reaches it in GIT_CONFIG_PARAMETERS; a filter set
// there, even under a name holding "=" and a quote, is neutralised too.
func TestNeutralisingOutlastsAnOuterGitC(t *testing.T) {
	repo, dir := openTestRepo(t, map[string]string{".gitattributes": "*.bin filter=a=b'c\n", "x.bin": "bytes\n"})
	marker := filepath.Join(t.TempDir(), "ran")
	t.Setenv("GIT_CONFIG_PARAMETERS", `'filter.a=b'\''c.smudge'='touch `+marker+`; cat' 'filter.a=b'\''c.required'='true'`)
	wt := t.TempDir()
	env := []string{"GIT_WORK_TREE=" + wt, "GIT_INDEX_FILE=" + filepath.Join(t.TempDir(), "index")}
	if _, err := repo.GitAt(context.Background(), filepath.Join(dir, ".git"), env, nil, "read-tree", "-u", "--reset", "HEAD"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a filter set by an outer git -c ran")
	}
	if b, err := os.ReadFile(filepath.Join(wt, "x.bin")); err != nil || string(b) != "bytes\n" {
		t.Fatalf("x.bin = %q, %v", b, err)
	}
	plain := exec.Command("git", "read-tree", "-u", "--reset", "HEAD")
	plain.Env = append(os.Environ(), env[0], "GIT_INDEX_FILE="+filepath.Join(t.TempDir(), "index"), "GIT_DIR="+filepath.Join(dir, ".git"))
	plain.Dir = dir
	os.Remove(filepath.Join(wt, "x.bin"))
	if out, err := plain.CombinedOutput(); err != nil {
		t.Fatalf("plain git: %v %s", err, out)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("plain git ran no filter: the test does not set up what it guards")
	}
}
