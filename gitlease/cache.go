package gitlease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/gitlease/policy"
	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/sandbox"
	"github.com/git-lease/git-lease/sandbox/bwrap"
	"github.com/git-lease/git-lease/sandbox/process"
)

// Build and package caches: trusted policy declares them ([caches.NAME]),
// git lease cache warm fills one in a sandbox on a base and keeps what the
// warm-up wrote under the cache's directories as a read-only layer (see
// sandbox/bwrap/cache.go), and every bwrap lease then sees the current
// layers through a copy-on-write overlay of its own, with the variables
// that name the cache's directories set. A lease's writes there are never
// collected and never reach a layer: only a warm-up makes one.

// cacheDir is where a repository's cache layers are kept.
func cacheDir(repo *refs.Repo) string { return repo.LeaseDir("caches") }

// cacheNames are the policy's caches, sorted.
func cacheNames(caches map[string]policy.CachePolicy) []string {
	return slices.Sorted(maps.Keys(caches))
}

// cacheEnv points each cache variable at its directory in the sandbox.
func cacheEnv(caches map[string]policy.CachePolicy) []string {
	var env []string
	for _, name := range cacheNames(caches) {
		for _, p := range caches[name].Paths {
			v, dir, _ := strings.Cut(p, ":")
			env = append(env, v+"="+dir)
		}
	}
	return env
}

// cacheMeta is a layer's meta.json: what was warmed, on what, when.
type cacheMeta struct {
	Base     string    `json:"base"`
	Tree     string    `json:"tree"`
	WarmedAt time.Time `json:"warmed_at"`
	Command  string    `json:"command"`
	Paths    []string  `json:"paths"`
}

// WarmCache runs the warm-up command of each cache of names (all the
// policy's when empty) in a sandbox on base with trusted policy's limits
// and network, and makes what it wrote under the cache's directories the
// cache's new layer, which the next leases get. A warm-up starts with the
// cache empty, so that a layer holds only what one warm-up on one base
// wrote.
func WarmCache(ctx context.Context, repo *refs.Repo, base plumbing.Hash, names []string, out io.Writer) ([]CacheInfo, error) {
	eff, err := policy.LoadForAgent(repo, plumbing.ZeroHash, "")
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		names = cacheNames(eff.Caches)
		if len(names) == 0 {
			return nil, fmt.Errorf("trusted policy declares no cache: add a [caches.NAME] table (see git lease cache --help)")
		}
	}
	commit, err := repo.Commit(base)
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	provider := bwrap.Provider{Self: self}
	if err := provider.Check(); err != nil {
		return nil, err
	}
	left, err := removeWarmLeftovers(ctx, repo, false)
	for _, line := range left {
		fmt.Fprintf(out, "cache: %s\n", line)
	}
	if err != nil {
		return nil, err
	}
	var warmed []CacheInfo
	for _, name := range names {
		c, ok := eff.Caches[name]
		if !ok {
			return warmed, fmt.Errorf("trusted policy declares no cache %q (it declares: %s)", name, strings.Join(cacheNames(eff.Caches), ", "))
		}
		if c.Warm == "" {
			return warmed, fmt.Errorf("caches.%s.warm is not set: trusted policy names no warm-up command", name)
		}
		fmt.Fprintf(out, "cache %s: warming on %s: %s\n", name, base.String()[:12], c.Warm)
		layer, err := warmOne(ctx, repo, eff, provider, commit.Hash, commit.TreeHash, name, c, out)
		if err != nil {
			return warmed, fmt.Errorf("cache %s: %w", name, err)
		}
		info := cacheInfo(layer)
		fmt.Fprintf(out, "cache %s: layer %s, %s\n", name, info.Layer, bwrap.HumanBytes(info.Bytes))
		warmed = append(warmed, info)
	}
	return warmed, nil
}

// A warm-up's sandbox is <caches>/.warm-<id>/sandbox. The directory
// around it is the warm-up's own (not the sandbox uid's) and records the
// process that runs it (process.RunnerFile) and the base tree it holds
// (warmTree), so that gc and the next warm-up discard what a warm-up that
// died left: its sandbox, its claim on a uid and on the base. It is made
// and read under the caches lock, so that one being made is never taken
// for one left.
const (
	warmPrefix = ".warm-"
	warmTree   = "tree"
)

// warmSpec is the sandbox of warm-up id on tree: where it is and what it
// holds, as Discard needs them.
func warmSpec(repo *refs.Repo, id string, tree plumbing.Hash) sandbox.Spec {
	return sandbox.Spec{
		ID:        "warm-" + id,
		Dir:       filepath.Join(cacheDir(repo), warmPrefix+id, "sandbox"),
		BaseTree:  tree.String(),
		BasesDir:  repo.LeaseDir("bases"),
		CachesDir: cacheDir(repo), // the overlay, with no layer under it
	}
}

// claimWarm makes the directory of a new warm-up on tree, recording this
// process as its runner.
func claimWarm(repo *refs.Repo, tree plumbing.Hash) (string, error) {
	b := make([]byte, 6)
	rand.Read(b)
	id := hex.EncodeToString(b)
	dir := filepath.Join(cacheDir(repo), warmPrefix+id)
	return id, bwrap.WithCachesLock(cacheDir(repo), func() error {
		if err := os.Mkdir(dir, 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, warmTree), []byte(tree.String()), 0o600); err != nil {
			return err
		}
		return process.WriteRunner(dir, os.Getpid())
	})
}

// removeWarmLeftovers discards the sandbox of every warm-up whose process
// is gone (by its recorded PID and start time: a reused PID is not it)
// and says so (with dryRun, would). One whose process runs is never
// touched.
func removeWarmLeftovers(ctx context.Context, repo *refs.Repo, dryRun bool) ([]string, error) {
	var left []string
	err := bwrap.WithCachesLock(cacheDir(repo), func() error {
		dirs, err := filepath.Glob(filepath.Join(cacheDir(repo), warmPrefix+"*"))
		for _, dir := range dirs {
			if _, _, alive := process.Runner(dir); !alive {
				left = append(left, dir)
			}
		}
		return err
	})
	var done []string
	for _, dir := range left {
		id := strings.TrimPrefix(filepath.Base(dir), warmPrefix)
		r, _, _ := process.Runner(dir)
		what := fmt.Sprintf("the sandbox of warm-up %s, whose process %d is gone", id, r.PID)
		if dryRun {
			done = append(done, "would remove "+what)
			continue
		}
		b, _ := os.ReadFile(filepath.Join(dir, warmTree))
		// Discard takes the lock: it runs outside it.
		tree := plumbing.NewHash(string(b))
		if err := (bwrap.Provider{}).Discard(ctx, warmSpec(repo, id, tree)); err != nil {
			return done, fmt.Errorf("warm-up %s: %w", id, err)
		}
		if err := os.RemoveAll(dir); err != nil {
			return done, err
		}
		done = append(done, "removed "+what)
	}
	return done, err
}

func warmOne(ctx context.Context, repo *refs.Repo, eff *policy.Effective, p bwrap.Provider, base, tree plumbing.Hash, name string, c policy.CachePolicy, out io.Writer) (bwrap.CacheLayer, error) {
	id, err := claimWarm(repo, tree)
	if err != nil {
		return bwrap.CacheLayer{}, err
	}
	spec := warmSpec(repo, id, tree)
	defer os.RemoveAll(filepath.Dir(spec.Dir)) // after Discard, below
	spec.ExportBase = func(dir string) error { return repo.ExportTree(tree, dir) }
	spec.ExportLayer = func(from, dir string, marks sandbox.LayerMarks) error {
		return repo.ExportLayer(plumbing.NewHash(from), tree, dir, marks)
	}
	spec.Distance = func(from string) (int, error) { return treeDistance(repo, plumbing.NewHash(from), tree) }
	spec.ReadOnly = eff.ReadOnly
	spec.SeccompAllow = eff.Bwrap.SeccompAllow
	lim := eff.Limits
	spec.Limits = sandbox.Limits{
		Wall: time.Duration(lim.Wall), CPU: time.Duration(lim.CPU), MemoryBytes: int64(lim.Memory),
		Processes: lim.Processes, DiskBytes: int64(lim.Disk), OutputBytes: int64(lim.Output),
	}
	allow, err := eff.LeaseAllowlist()
	if err != nil {
		return bwrap.CacheLayer{}, err
	}
	if network := startNetwork(allow); network != nil {
		defer network.stop()
		spec.Proxy = network.proxy
	}
	defer p.Discard(context.Background(), spec)
	if err := p.Create(ctx, spec); err != nil {
		return bwrap.CacheLayer{}, err
	}
	proc, err := p.Launch(ctx, spec, sandbox.Command{Argv: []string{"sh", "-c", c.Warm}, Env: cacheEnv(map[string]policy.CachePolicy{name: c}), Output: out})
	if err != nil {
		return bwrap.CacheLayer{}, err
	}
	if err := proc.Release(); err != nil {
		proc.Wait()
		return bwrap.CacheLayer{}, err
	}
	exit, err := proc.Wait()
	switch {
	case err != nil:
		return bwrap.CacheLayer{}, err
	case exit.Bound != "":
		return bwrap.CacheLayer{}, fmt.Errorf("the warm-up reached its %s bound (%s); no layer made", exit.Bound, exit.Detail)
	case exit.Code != 0 || exit.Signal != "":
		return bwrap.CacheLayer{}, fmt.Errorf("the warm-up failed (exit %d%s); no layer made", exit.Code, exit.Signal)
	}
	upper, err := p.CacheUpper(spec)
	if err != nil {
		return bwrap.CacheLayer{}, err
	}
	var dirs []string
	for _, p := range c.Paths {
		_, dir, _ := strings.Cut(p, ":")
		dirs = append(dirs, strings.TrimPrefix(dir, bwrap.CacheRoot+"/"))
	}
	meta, _ := json.Marshal(cacheMeta{Base: base.String(), Tree: tree.String(), WarmedAt: repo.Now().UTC(), Command: c.Warm, Paths: c.Paths})
	return bwrap.AddCacheLayer(cacheDir(repo), name, upper, dirs, meta)
}

// CacheInfo is one cache layer as git lease cache ls shows it.
type CacheInfo struct {
	Name       string    `json:"name"`
	Layer      string    `json:"layer"`
	Bytes      int64     `json:"bytes"`
	Base       string    `json:"base,omitempty"`
	WarmedAt   time.Time `json:"warmed_at"`
	Command    string    `json:"command,omitempty"`
	Current    bool      `json:"current"`
	Users      int       `json:"users"`
	Superseded bool      `json:"superseded"`
}

func cacheInfo(l bwrap.CacheLayer) CacheInfo {
	var m cacheMeta
	json.Unmarshal(l.Meta, &m)
	return CacheInfo{Name: l.Name, Layer: l.Seq, Bytes: l.Bytes, Base: m.Base, WarmedAt: m.WarmedAt, Command: m.Command, Users: l.Users, Superseded: l.Superseded, Current: !l.Superseded}
}

// ListCaches is every cache layer of the repository, by cache name, the
// newest first.
func ListCaches(repo *refs.Repo) ([]CacheInfo, error) {
	names, err := bwrap.CacheNames(cacheDir(repo))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	infos := []CacheInfo{}
	for _, name := range names {
		layers, err := bwrap.CacheLayers(cacheDir(repo), name)
		if err != nil {
			return nil, err
		}
		for _, l := range layers {
			infos = append(infos, cacheInfo(l))
		}
	}
	return infos, nil
}

// RemoveCache makes cache name no lease's from now on and removes its
// layers that no running lease uses; gc removes the others after them.
func RemoveCache(repo *refs.Repo, name string, dryRun bool) ([]string, error) {
	return bwrap.RemoveCache(cacheDir(repo), name, dryRun)
}

// EvictCaches removes what warm-ups that died left, then the cache layers
// that no lease uses: those a newer warm-up or cache rm replaced, then
// those past the age and size cap of trusted policy's [cache_layers]
// table; it says what each freed.
func EvictCaches(ctx context.Context, repo *refs.Repo, dryRun bool) ([]string, error) {
	eff, err := policy.LoadForAgent(repo, plumbing.ZeroHash, "")
	if err != nil {
		return nil, err
	}
	done, err := removeWarmLeftovers(ctx, repo, dryRun)
	if err != nil {
		return done, err
	}
	c := eff.CacheLayers
	evicted, err := bwrap.EvictCaches(cacheDir(repo), time.Duration(c.MaxAge), int64(c.MaxBytes), time.Now(), dryRun)
	return append(done, evicted...), err
}
