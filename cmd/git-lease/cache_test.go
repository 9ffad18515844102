package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/git-lease/git-lease/refs/refstest"
)

// git lease cache warm makes a layer per warm-up, cache ls lists them, gc
// frees the layer a newer warm-up replaced, and cache rm the rest.
func TestCacheWarmListRemove(t *testing.T) {
	dir := faultRepo(t)
	policy := "[caches.tool]\npaths = [\"TOOL_CACHE:/cache/tool\"]\nwarm = \"mkdir -p $TOOL_CACHE && head -c 5000 /dev/zero > $TOOL_CACHE/blob\"\n"
	writeTrustedPolicy(t, policy)
	if out := mustRun(t, dir, "cache", "ls"); !strings.Contains(out, "no caches") {
		t.Fatalf("cache ls before any warm-up:\n%s", out)
	}
	if out, err := runLease(t, dir, nil, "cache", "warm", "nosuch"); err == nil || !strings.Contains(out, `no cache "nosuch"`) {
		t.Fatalf("warm of an undeclared cache: %v\n%s", err, out)
	}
	mustRun(t, dir, "cache", "warm", "--base", "HEAD", "tool")
	mustRun(t, dir, "cache", "warm")
	var infos []struct {
		Name, Layer, Base string
		Bytes             int64
		Current           bool
	}
	if err := json.Unmarshal([]byte(mustRun(t, dir, "cache", "ls", "--json")), &infos); err != nil {
		t.Fatal(err)
	}
	head := strings.TrimSpace(refstest.Git(t, dir, "rev-parse", "HEAD"))
	if len(infos) != 2 || infos[0].Layer != "000002" || !infos[0].Current || infos[1].Current || infos[0].Base != head || infos[0].Bytes < 5000 {
		t.Fatalf("cache ls --json: %+v", infos)
	}
	if out := mustRun(t, dir, "cache", "ls"); !strings.Contains(out, "tool   000001") || !strings.Contains(out, "superseded") {
		t.Fatalf("cache ls:\n%s", out)
	}
	if out := mustRun(t, dir, "gc", "--dry-run"); !strings.Contains(out, "would remove cache tool layer 000001") {
		t.Fatalf("gc --dry-run:\n%s", out)
	}
	if out := mustRun(t, dir, "gc"); !strings.Contains(out, "removed cache tool layer 000001") || strings.Contains(out, "000002") {
		t.Fatalf("gc:\n%s", out)
	}
	if out := mustRun(t, dir, "cache", "rm", "tool"); !strings.Contains(out, "removed cache tool layer 000002") {
		t.Fatalf("cache rm:\n%s", out)
	}
	if out := mustRun(t, dir, "cache", "ls"); !strings.Contains(out, "no caches") {
		t.Fatalf("cache ls after rm:\n%s", out)
	}
}

// gc evicts the cache layers no lease uses by trusted policy's
// [cache_layers] cap and says what it freed; the layer a lease in review
// has mounted stays until its cleanup.
func TestGCEvictsUnusedCacheLayers(t *testing.T) {
	dir := faultRepo(t)
	policy := "[cache_layers]\nmax_bytes = 1\n[caches.tool]\npaths = [\"TOOL_CACHE:/cache/tool\"]\nwarm = \"mkdir -p $TOOL_CACHE && head -c 5000 /dev/zero > $TOOL_CACHE/blob\"\n"
	writeTrustedPolicy(t, policy)
	mustRun(t, dir, "cache", "warm")
	id := startLease(t, dir, "cat /cache/tool/blob > x.txt")
	if out := mustRun(t, dir, "gc"); strings.Contains(out, "cache tool") {
		t.Fatalf("gc touched the layer of a lease in review:\n%s", out)
	}
	mustRun(t, dir, "cleanup", id)
	if out := mustRun(t, dir, "gc", "--dry-run"); !strings.Contains(out, "would evict cache tool layer 000001 (") || !strings.Contains(out, "over the size cap") {
		t.Fatalf("gc --dry-run:\n%s", out)
	}
	if out := mustRun(t, dir, "gc"); !strings.Contains(out, "evicted cache tool layer 000001 (") {
		t.Fatalf("gc:\n%s", out)
	}
	if out := mustRun(t, dir, "cache", "ls"); !strings.Contains(out, "no caches") {
		t.Fatalf("cache ls after gc:\n%s", out)
	}
}

// A git lease cache warm killed mid-way leaves its sandbox behind: gc
// leaves it while the warm-up runs, and once its process is gone removes
// it with its claims on the base and (as root) on a uid.
func TestGCRemovesWhatAKilledWarmUpLeft(t *testing.T) {
	dir := faultRepo(t)
	policy := "[caches.tool]\npaths = [\"TOOL_CACHE:/cache/tool\"]\nwarm = \"mkdir -p $TOOL_CACHE && echo warming-up && exec sleep 600\"\n"
	writeTrustedPolicy(t, policy)
	warm := exec.Command(filepath.Join(binDir, "git-lease"), "cache", "warm")
	warm.Dir = dir
	stderr, err := warm.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := warm.Start(); err != nil {
		t.Fatal(err)
	}
	defer warm.Process.Kill()
	lines := bufio.NewScanner(stderr)
	for lines.Scan() && lines.Text() != "warming-up" {
	}
	caches := filepath.Join(dir, ".git", "lease", "caches")
	held := func() []string {
		users, _ := filepath.Glob(filepath.Join(dir, ".git", "lease", "bases", "*", "users", "warm-*"))
		return users
	}
	left, _ := filepath.Glob(filepath.Join(caches, ".warm-*"))
	if len(left) != 1 || len(held()) != 1 {
		t.Fatalf("the running warm-up: %v, holding %v", left, held())
	}
	uid, _ := os.ReadFile(filepath.Join(left[0], "sandbox", "uid"))
	if out := mustRun(t, dir, "gc"); strings.Contains(out, "warm-up") {
		t.Fatalf("gc touched a running warm-up:\n%s", out)
	}
	if _, err := os.Stat(left[0]); err != nil || len(held()) != 1 {
		t.Fatalf("gc removed a running warm-up: %v, holding %v", err, held())
	}
	warm.Process.Kill()
	warm.Wait()
	if out := mustRun(t, dir, "gc", "--dry-run"); !strings.Contains(out, "would remove the sandbox of warm-up") {
		t.Fatalf("gc --dry-run:\n%s", out)
	}
	if _, err := os.Stat(left[0]); err != nil {
		t.Fatalf("the dry run removed it: %v", err)
	}
	if out := mustRun(t, dir, "gc"); !strings.Contains(out, "removed the sandbox of warm-up") {
		t.Fatalf("gc:\n%s", out)
	}
	if _, err := os.Lstat(left[0]); err == nil || len(held()) != 0 {
		t.Fatalf("gc left %s, holding %v", left[0], held())
	}
	if len(uid) > 0 {
		if owner, err := os.ReadFile(filepath.Join("/run/git-lease-uids", string(uid))); err == nil && strings.HasPrefix(string(owner), left[0]) {
			t.Fatalf("uid %s is still claimed by %s", uid, owner)
		}
	}
}

// git lease policy prints each declared cache, as text and as JSON.
func TestPolicyPrintsCaches(t *testing.T) {
	dir := faultRepo(t)
	policy := "[caches.tool]\npaths = [\"TOOL_CACHE:/cache/tool\"]\nwarm = \"make warm\"\n"
	writeTrustedPolicy(t, policy)
	out := mustRun(t, dir, "policy")
	var lines []string
	for _, line := range strings.Split(out, "\n") {
		lines = append(lines, strings.Join(strings.Fields(line), " "))
	}
	for _, want := range []string{`caches.tool.paths trusted policy ["TOOL_CACHE:/cache/tool"]`, `caches.tool.warm trusted policy "make warm"`} {
		if !slices.Contains(lines, want) {
			t.Fatalf("git lease policy lacks %q:\n%s", want, out)
		}
	}
	var printed struct {
		Caches map[string]struct {
			Paths []string
			Warm  string
		}
		Sources map[string]string
	}
	if err := json.Unmarshal([]byte(mustRun(t, dir, "policy", "--json")), &printed); err != nil {
		t.Fatal(err)
	}
	if c := printed.Caches["tool"]; len(c.Paths) != 1 || c.Paths[0] != "TOOL_CACHE:/cache/tool" || c.Warm != "make warm" || printed.Sources["caches"] != "trusted policy" {
		t.Fatalf("git lease policy --json: %+v", printed)
	}
}

// writeTrustedPolicy makes policy the user's trusted policy file.
func writeTrustedPolicy(t *testing.T, policy string) {
	t.Helper()
	writeFile(t, filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "git-lease", "policy.toml"), policy, 0o644)
}
