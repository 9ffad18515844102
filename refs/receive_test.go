package refs_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/refs/refstest"
)

// receiveReportEnv names the file TestReceiveHookHelper reports to.
const receiveReportEnv = "GIT_LEASE_TEST_RECEIVE_REPORT"

// TestReceiveHookHelper is run by a real pre-receive hook (see
// TestOpenReceivingSeesThePushedObjects), inside git's quarantine; on its
// own it is skipped. It reports what OpenReceiving, and for comparison a
// plain OpenCommonDir, can see of each pushed commit.
func TestReceiveHookHelper(t *testing.T) {
	report := os.Getenv(receiveReportEnv)
	if report == "" {
		t.Skip("run by a pre-receive hook")
	}
	var out []string
	say := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	defer func() { os.WriteFile(report, []byte(strings.Join(out, "\n")+"\n"), 0o644) }()

	q := os.Getenv("GIT_QUARANTINE_PATH")
	say("quarantine not named objects: %v", q != "" && filepath.Base(q) != "objects")
	wd, _ := os.Getwd()
	plain, err := refs.OpenCommonDir(wd)
	if err != nil {
		say("OpenCommonDir: %v", err)
		return
	}
	repo, done, err := refs.OpenReceiving(wd, os.Environ())
	if err != nil {
		say("OpenReceiving: %v", err)
		return
	}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		old, pushed := plumbing.NewHash(f[0]), plumbing.NewHash(f[1])
		_, err := plain.Commit(pushed)
		say("plain open reads %s: %v", f[2], err == nil)
		b, err := repo.ReadFile(pushed, "pushed.txt", 100)
		say("OpenReceiving reads %s: %q %v", f[2], b, err)
		_, err = repo.Git(context.Background(), nil, "cat-file", "-e", pushed.String())
		say("git reads it: %v", err)
		tip, err := repo.Ref(f[2])
		say("the server's ref is the old value: %v %v", tip == old, err)
	}
	v, err := repo.Git(context.Background(), nil, "config", "--get", "test.marker")
	say("the server's config: %s %v", strings.TrimSpace(string(v)), err)
	done()
	_, err = os.Stat(repo.CommonDir)
	say("done removes the stand-in: %v", os.IsNotExist(err))
	_, err = os.Stat(filepath.Join(wd, "refs", "heads"))
	say("done leaves the repository's refs: %v", err)
}

func TestOpenReceivingSeesThePushedObjects(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name        string
		unpackLimit string // receive.unpackLimit: 1 keeps the push as a pack, 100 unpacks it into loose objects
		plainReads  bool   // go-git alone finds loose objects in the quarantine, but not a pack
	}{{"loose objects", "100", true}, {"a pack", "1", false}} {
		t.Run(c.name, func(t *testing.T) {
			dir := refstest.Repo(t, map[string]string{"a": "1"})
			server := filepath.Join(t.TempDir(), "server.git")
			refstest.Git(t, "", "init", "-q", "--bare", server)
			refstest.Git(t, server, "config", "receive.unpackLimit", c.unpackLimit)
			refstest.Git(t, server, "config", "test.marker", "from-the-server")
			refstest.Git(t, dir, "push", "-q", server, "main")
			hook := "#!/bin/sh\nexec '" + self + "' -test.run='^TestReceiveHookHelper$' -test.count=1 >/dev/null\n"
			if err := os.WriteFile(filepath.Join(server, "hooks", "pre-receive"), []byte(hook), 0o755); err != nil {
				t.Fatal(err)
			}
			refstest.Write(t, dir, map[string]string{"pushed.txt": "quarantined"})
			refstest.Git(t, dir, "add", "pushed.txt")
			refstest.Git(t, dir, "commit", "-q", "-m", "second")
			report := filepath.Join(t.TempDir(), "report")
			push := exec.Command("git", "push", "-q", server, "main")
			push.Dir = dir
			push.Env = append(append(os.Environ(), refstest.Env...), receiveReportEnv+"="+report)
			if out, err := push.CombinedOutput(); err != nil {
				t.Fatalf("push: %v\n%s", err, out)
			}
			got, err := os.ReadFile(report)
			if err != nil {
				t.Fatalf("the hook did not report: %v", err)
			}
			want := fmt.Sprintf("quarantine not named objects: true\nplain open reads refs/heads/main: %v\n", c.plainReads) + `OpenReceiving reads refs/heads/main: "quarantined" <nil>
git reads it: <nil>
the server's ref is the old value: true <nil>
the server's config: from-the-server <nil>
done removes the stand-in: true
done leaves the repository's refs: <nil>
`
			if string(got) != want {
				t.Fatalf("the hook saw:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func TestSplitAlternates(t *testing.T) {
	for in, want := range map[string][]string{
		"":                           nil,
		"/a/objects":                 {"/a/objects"},
		"/a/objects:/b/objects":      {"/a/objects", "/b/objects"},
		`"/a:b/objects":/c`:          {"/a:b/objects", "/c"},
		`"/q\"uote\\":/d`:            {`/q"uote\`, "/d"},
		`"/caf\303\251/objects"`:     {"/café/objects"},
		`/plain/objects:"/x y/objs"`: {"/plain/objects", "/x y/objs"},
	} {
		got, err := refs.SplitAlternatesForTest(in)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("splitAlternates(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := refs.SplitAlternatesForTest(`"/unterminated`); err == nil {
		t.Error("an unterminated quote was accepted")
	}
}
