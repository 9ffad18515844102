package bwrap

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/git-lease/git-lease/sandbox"
)

// Build and package caches (Go's build and module caches, npm's, pip's,
// cargo's) are kept per repository in <CachesDir>/<name>/<seq>: read-only
// layers that only a trusted warm-up writes (AddCacheLayer). A lease whose
// spec names caches sees the current layer of each as a lower layer of an
// overlay at CacheRoot whose upper directory is the lease's own, on the
// lease's disk: what an agent writes there stays in its lease, so no agent
// changes what another lease reads, and none of it is collected.
//
// A layer directory holds layer/ (its files as they appear under
// CacheRoot), meta.json (the warm-up's record, opaque here), users/ (one
// empty file per lease that mounts it, as for bases) and, once a newer
// warm-up or git lease cache rm replaced it, superseded: a superseded
// layer is mounted by no new lease, and goes with its last user
// (EvictCaches), which also evicts the current layers no lease uses by
// age and a size cap, as EvictBases does bases. All changes happen under
// an exclusive flock on <CachesDir>/.lock, and a layer appears only by an
// atomic rename.

// CacheRoot is where the caches appear in the sandbox.
const CacheRoot = "/cache"

// The lease's own upper and work directories of the cache overlay, next
// to those of its /work overlay (overlayfs wants both on one file system).
const (
	cacheUpper = "cache-upper"
	cacheWork  = "cache-work"
)

// ValidCacheName is a cache's name as a directory may hold it.
func ValidCacheName(s string) bool {
	return s != "" && len(s) <= 64 && strings.Trim(s, "abcdefghijklmnopqrstuvwxyz0123456789_-") == "" && s[0] != '-'
}

// CacheLayer is one layer of a cache.
type CacheLayer struct {
	Name       string
	Seq        string
	Dir        string
	Meta       []byte // meta.json as the warm-up wrote it
	Bytes      int64
	Users      int
	Used       time.Time // when a lease last came or went (usersOf)
	Superseded bool
}

// CacheLayers are the layers of cache name, newest first.
func CacheLayers(caches, name string) ([]CacheLayer, error) {
	entries, err := os.ReadDir(filepath.Join(caches, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var layers []CacheLayer
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		dir := filepath.Join(caches, name, e.Name())
		l := CacheLayer{Name: name, Seq: e.Name(), Dir: dir}
		l.Meta, _ = os.ReadFile(filepath.Join(dir, "meta.json"))
		l.Bytes = diskUsage(filepath.Join(dir, "layer"))
		l.Users, l.Used = usersOf(dir)
		_, err := os.Lstat(filepath.Join(dir, "superseded"))
		l.Superseded = err == nil
		layers = append(layers, l)
	}
	sort.Slice(layers, func(i, j int) bool { return layers[i].Seq > layers[j].Seq })
	return layers, nil
}

// CacheNames are the caches that have layers in caches, sorted.
func CacheNames(caches string) ([]string, error) {
	entries, err := os.ReadDir(caches)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && ValidCacheName(e.Name()) {
			names = append(names, e.Name())
		}
	}
	return names, err
}

// WithCachesLock runs fn holding the lock of the caches directory caches,
// under which every layer and lease's use of one changes; fn must not
// call what takes it (Discard, AddCacheLayer).
func WithCachesLock(caches string, fn func() error) error { return withBasesLock(caches, fn) }

// current is the layer of cache name that new leases mount, if any.
func current(caches, name string) (CacheLayer, bool, error) {
	layers, err := CacheLayers(caches, name)
	for _, l := range layers {
		if !l.Superseded {
			return l, true, err
		}
	}
	return CacheLayer{}, false, err
}

// acquireCaches counts spec's lease as a user of the current layer of each
// cache it names. It is idempotent per lease.
func acquireCaches(spec sandbox.Spec) error {
	if spec.CachesDir == "" {
		return nil
	}
	return withBasesLock(spec.CachesDir, func() error {
		for _, name := range spec.Caches {
			if !ValidCacheName(name) {
				return fmt.Errorf("bad cache name %q", name)
			}
			l, ok, err := current(spec.CachesDir, name)
			if err != nil {
				return err
			}
			if !ok {
				continue // never warmed: the lease starts with it empty
			}
			users := filepath.Join(l.Dir, "users")
			if err := os.MkdirAll(users, 0o700); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(users, spec.ID), nil, 0o600); err != nil {
				return err
			}
		}
		return nil
	})
}

// heldCaches are the layer directories spec's lease acquired, in the order
// of spec.Caches: the lower layers of its cache overlay.
func heldCaches(spec sandbox.Spec) []string {
	var dirs []string
	for _, name := range spec.Caches {
		layers, _ := CacheLayers(spec.CachesDir, name)
		for _, l := range layers {
			if _, err := os.Lstat(filepath.Join(l.Dir, "users", spec.ID)); err == nil {
				dirs = append(dirs, filepath.Join(l.Dir, "layer"))
				break
			}
		}
	}
	return dirs
}

// releaseCaches drops spec's lease from the users of every layer. The
// layers stay. Releasing twice is harmless.
func releaseCaches(spec sandbox.Spec) error {
	if spec.CachesDir == "" {
		return nil
	}
	if _, err := os.Stat(spec.CachesDir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return withBasesLock(spec.CachesDir, func() error {
		held, _ := filepath.Glob(filepath.Join(spec.CachesDir, "*", "*", "users", spec.ID))
		for _, h := range held {
			if err := os.Remove(h); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		return nil
	})
}

// CacheUpper is the upper directory of spec's cache overlay: what its
// sandbox wrote under CacheRoot (in this process's own mount of the
// lease's disk image when it has one).
func (Provider) CacheUpper(spec sandbox.Spec) (string, error) {
	d, err := leaseDirs(spec)
	return d.cache, err
}

// AddCacheLayer makes a new layer of cache name from the directories paths
// (relative to CacheRoot) of upper, a cache overlay's upper directory,
// with meta as its meta.json, and supersedes every older layer of the
// cache. The files become the caller's (root's, when root), so that they
// are nobody's in the sandbox but through the overlay.
func AddCacheLayer(caches, name, upper string, paths []string, meta []byte) (CacheLayer, error) {
	if !ValidCacheName(name) {
		return CacheLayer{}, fmt.Errorf("bad cache name %q", name)
	}
	var added CacheLayer
	err := withBasesLock(caches, func() error {
		dir := filepath.Join(caches, name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		stale, _ := filepath.Glob(filepath.Join(dir, ".tmp-*"))
		for _, s := range stale {
			removeAll(s)
		}
		layers, err := CacheLayers(caches, name)
		if err != nil {
			return err
		}
		seq := fmt.Sprintf("%06d", 1)
		if len(layers) > 0 {
			var n int
			fmt.Sscanf(layers[0].Seq, "%d", &n)
			seq = fmt.Sprintf("%06d", n+1)
		}
		tmp, err := os.MkdirTemp(dir, ".tmp-"+seq+"-")
		if err != nil {
			return err
		}
		layer := filepath.Join(tmp, "layer")
		err = os.Mkdir(layer, 0o755)
		for _, p := range paths {
			if err != nil {
				break
			}
			src := filepath.Join(upper, p)
			if _, serr := os.Lstat(src); errors.Is(serr, fs.ErrNotExist) {
				continue // the warm-up wrote nothing there
			}
			if err = os.MkdirAll(filepath.Dir(filepath.Join(layer, p)), 0o755); err == nil {
				err = copyTree(src, filepath.Join(layer, p))
			}
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(tmp, "meta.json"), meta, 0o600)
		}
		if err == nil {
			err = os.Rename(tmp, filepath.Join(dir, seq))
		}
		if err != nil {
			removeAll(tmp)
			return fmt.Errorf("cache %s: %w", name, err)
		}
		for _, l := range layers {
			if !l.Superseded {
				if err := os.WriteFile(filepath.Join(l.Dir, "superseded"), nil, 0o600); err != nil {
					return err
				}
			}
		}
		added = CacheLayer{Name: name, Seq: seq, Dir: filepath.Join(dir, seq), Meta: meta, Bytes: diskUsage(filepath.Join(dir, seq, "layer"))}
		return nil
	})
	return added, err
}

// RemoveCache supersedes every layer of cache name, so that no new lease
// mounts it, and removes those no lease uses.
func RemoveCache(caches, name string, dryRun bool) ([]string, error) {
	if !ValidCacheName(name) {
		return nil, fmt.Errorf("bad cache name %q", name)
	}
	var done []string
	err := withBasesLock(caches, func() error {
		layers, err := CacheLayers(caches, name)
		if err != nil || len(layers) == 0 {
			return errors.Join(err, fmt.Errorf("no cache %s", name))
		}
		for _, l := range layers {
			if dryRun {
				break
			}
			if err := os.WriteFile(filepath.Join(l.Dir, "superseded"), nil, 0o600); err != nil {
				return err
			}
		}
		done, err = removeUnused(caches, name, dryRun, true)
		return err
	})
	return done, err
}

// EvictCaches removes the cache layers that no lease uses: the superseded
// ones, then, as EvictBases does bases, those last used before
// now-maxAge, then the least recently used while all the layers take more
// than maxBytes (0: no cap). It says what each freed (with dryRun, would
// free).
func EvictCaches(caches string, maxAge time.Duration, maxBytes int64, now time.Time, dryRun bool) ([]string, error) {
	var done []string
	err := withBasesLock(caches, func() error {
		names, err := CacheNames(caches)
		if err != nil {
			return err
		}
		var all []*exported
		for _, name := range names {
			removed, err := removeUnused(caches, name, dryRun, false)
			done = append(done, removed...)
			if err != nil {
				return err
			}
			layers, err := CacheLayers(caches, name)
			if err != nil {
				return err
			}
			for _, l := range layers {
				if l.Superseded && l.Users == 0 {
					continue // a dry run's, which removeUnused would remove
				}
				key := name + "/" + l.Seq
				all = append(all, &exported{key: key, name: "cache " + name + " layer " + l.Seq, dir: l.Dir, chain: []string{key}, users: l.Users, used: l.Used, bytes: l.Bytes})
			}
		}
		evicted, err := evict(all, maxAge, maxBytes, now, dryRun)
		done = append(done, evicted...)
		for _, name := range names {
			os.Remove(filepath.Join(caches, name)) // when it is empty
		}
		return err
	})
	return done, err
}

// removeUnused removes the layers of cache name that are superseded (all
// of them, with all) and that no lease uses; with all, it also says which
// stay for their users. The caller holds the lock.
func removeUnused(caches, name string, dryRun, all bool) ([]string, error) {
	var done []string
	layers, err := CacheLayers(caches, name)
	if err != nil {
		return nil, err
	}
	for _, l := range layers {
		what := fmt.Sprintf("cache %s layer %s (%s)", name, l.Seq, HumanBytes(l.Bytes))
		switch {
		case !l.Superseded && !all:
			continue
		case l.Users > 0:
			if all {
				done = append(done, fmt.Sprintf("keep %s while %d lease(s) use it: git lease gc removes it after them", what, l.Users))
			}
			continue
		case dryRun:
			done = append(done, "would remove "+what)
			continue
		}
		if err := removeAll(l.Dir); err != nil {
			return done, err
		}
		done = append(done, "removed "+what)
	}
	os.Remove(filepath.Join(caches, name)) // when it is empty
	return done, nil
}

// copyTree copies src (a directory of a warm-up's cache overlay, whose
// lower layer was empty, so that it holds no whiteouts or opaque marks) to
// dst: directories, regular files and symlinks, with their modes but no
// set-id bits. Directory modes are set last, as Go's module cache makes
// its directories read-only. It never follows a symlink.
func copyTree(src, dst string) error {
	type dirMode struct {
		path string
		mode os.FileMode
	}
	var dirs []dirMode
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		mode := info.Mode()
		switch {
		case mode.IsDir():
			if err := os.Mkdir(to, 0o700); err != nil {
				return err
			}
			dirs = append(dirs, dirMode{to, mode.Perm()})
		case mode.IsRegular():
			return copyFile(p, to, mode.Perm())
		case mode&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		}
		return nil // devices, pipes, sockets: nothing a cache needs
	})
	if err != nil {
		return err
	}
	slices.Reverse(dirs)
	for _, d := range dirs {
		if err := os.Chmod(d.path, d.mode); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string, perm os.FileMode) error {
	in, err := os.OpenFile(src, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Chmod(perm); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
