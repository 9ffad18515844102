// Package refs is git-lease's git store: repository discovery, objects, trees,
// compare-and-swap ref transactions and the lease log engine. It reads with
// go-git and writes refs only through `git update-ref --stdin`. It knows
// nothing of sandboxes.
package refs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

var (
	// ErrNotRepo is returned when the directory is not inside a git repository.
	ErrNotRepo = errors.New("not a git repository (or any parent): run git lease inside a git checkout")
	// ErrBare is returned for bare repositories, which have no checkout to lease from.
	ErrBare = errors.New("this is a bare repository: git lease needs a repository with a work tree (clone it, or use git worktree add)")
)

// Repo is one git repository as git-lease sees it.
type Repo struct {
	// GitDir is the git directory of the checkout the user is in.
	GitDir string
	// CommonDir is the directory shared by all worktrees: objects and refs.
	CommonDir string
	// WorkTree is the top of the user's checkout, and Prefix the directory
	// the user is in, relative to it ("" at the top; slash-separated).
	WorkTree string
	Prefix   string
	// CommitSigner, when set, signs every commit WriteCommit writes: it
	// gets the commit without its signature and returns what goes in the
	// gpgsig header (an armored SSH signature, as git writes one).
	CommitSigner func(payload []byte) (string, error)

	// mu guards ident and config, read once on first use by whichever
	// goroutine asks first.
	mu     sync.Mutex
	ident  *ident
	config map[string]string // Config's cache
	// drivers caches neutralDrivers per git dir and environment: the
	// config files it reads do not change while git-lease runs, and
	// every command that writes a tree would otherwise pay a git process.
	drivers sync.Map
	store   store
	git     *git.Repository
}

// Open finds the repository that contains dir, as git does, and opens it.
// It refuses bare repositories and repositories go-git cannot read.
func Open(dir string) (*Repo, error) {
	// One git process answers everything; --show-toplevel fails (after
	// printing the rest) where there is no work tree.
	cmd := exec.Command("git", "rev-parse", "--path-format=absolute",
		"--is-bare-repository", "--git-dir", "--git-common-dir", "--show-prefix", "--show-toplevel")
	cmd.Dir = dir
	cmd.Env = gitEnv(os.Environ())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	switch {
	case strings.Contains(stderr.String(), "not a git repository"):
		return nil, ErrNotRepo
	case len(lines) >= 1 && lines[0] == "true":
		return nil, ErrBare
	case err != nil && len(lines) == 3: // the prefix line is empty and trimmed
		return nil, fmt.Errorf("%s: run git lease inside the checkout, not inside its .git directory", dir)
	case err != nil:
		return nil, fmt.Errorf("git rev-parse: %s", firstLine(stderr.String(), err))
	case len(lines) != 5:
		return nil, fmt.Errorf("git rev-parse: unexpected output %q", out)
	}
	r := &Repo{GitDir: lines[1], CommonDir: lines[2], Prefix: strings.TrimSuffix(lines[3], "/"), WorkTree: lines[4]}
	if err := r.openStore(); err != nil {
		return nil, err
	}
	return r, nil
}

// OpenCommonDir opens a repository by its common directory, for processes
// that already know it (the supervisor, hooks). It does not need a work tree.
func OpenCommonDir(commonDir string) (*Repo, error) {
	r := &Repo{GitDir: commonDir, CommonDir: commonDir}
	return r, r.openStore()
}

func (r *Repo) openStore() error {
	return r.openStoreOn(osfs.New(r.CommonDir), osfs.New("/"))
}

// openStoreOn opens go-git's storage on fs, the common directory, reading
// objects/info/alternates entries through alternates.
func (r *Repo) openStoreOn(fs, alternates billy.Filesystem) error {
	// Pack files stay open between reads (go-git reopens them for every
	// object otherwise): the store reads them one call at a time.
	r.store = newStore(filesystem.NewStorageWithOptions(fs, cache.NewObjectLRUDefault(), filesystem.Options{AlternatesFS: alternates, KeepDescriptors: true}))
	repo, err := git.Open(r.store, nil)
	if err != nil {
		if errors.Is(err, git.ErrUnknownExtension) || errors.Is(err, git.ErrUnsupportedExtensionRepositoryFormatVersion) ||
			errors.Is(err, git.ErrUnsupportedRepositoryFormatVersion) {
			// go-git knows no extensions.objectFormat, even one that says
			// sha1 (the default, which may be removed).
			format, _ := r.Git(context.Background(), nil, "config", "--get", "extensions.objectformat")
			if f := strings.ToLower(string(bytes.TrimSpace(format))); f != "" && f != "sha1" {
				return fmt.Errorf("cannot read this repository: git-lease works on SHA-1 repositories, and this one uses %s", f)
			}
			return fmt.Errorf("cannot read this repository (%v): remove the extension or use a clone without it", err)
		}
		return fmt.Errorf("open repository %s: %w", r.CommonDir, err)
	}
	r.git = repo
	return nil
}

// LeaseDir is git-lease's local runtime directory, never pushed.
func (r *Repo) LeaseDir(parts ...string) string {
	return filepath.Join(append([]string{r.CommonDir, "lease"}, parts...)...)
}

// hostileConfig neutralises configuration that would run programs while
// git-lease drives git: hooks, fsmonitor, external diff and textconv drivers.
var hostileConfig = []string{
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.fsmonitor=false",
	"-c", "diff.external=",
	"-c", "core.quotePath=true",
}

// Git runs git on the repository's common directory (never inside a work tree
// an agent could write) and returns its standard output. stdin may be nil.
func (r *Repo) Git(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	return r.GitEnv(ctx, nil, stdin, args...)
}

// GitEnv is Git with extra environment variables (GIT_INDEX_FILE, GIT_WORK_TREE).
func (r *Repo) GitEnv(ctx context.Context, env []string, stdin []byte, args ...string) ([]byte, error) {
	return r.GitAt(ctx, r.CommonDir, env, stdin, args...)
}

// GitAt runs git with gitDir as GIT_DIR and as its working directory.
func (r *Repo) GitAt(ctx context.Context, gitDir string, env []string, stdin []byte, args ...string) ([]byte, error) {
	return r.gitIn(ctx, gitDir, gitDir, env, stdin, args...)
}

// remoteGit runs a git command that talks to a remote (push, fetch) at the
// top of the checkout, where git itself runs them, so that a remote
// configured with a relative path ("../server.git") means what it means to
// git.
func (r *Repo) remoteGit(ctx context.Context, args ...string) ([]byte, error) {
	return r.gitIn(ctx, r.WorkTree, r.CommonDir, nil, nil, args...)
}

// gitIn runs git in dir with gitDir as GIT_DIR; a command that writes,
// merges or compares a tree runs with every configured filter, merge and
// diff driver neutralised (see neutralDrivers).
func (r *Repo) gitIn(ctx context.Context, dir, gitDir string, env []string, stdin []byte, args ...string) ([]byte, error) {
	if len(args) > 0 && driverCommands[args[0]] {
		key := gitDir + "\x00" + strings.Join(env, "\x00")
		neutral, ok := r.drivers.Load(key)
		if !ok {
			n, err := neutralDrivers(ctx, dir, gitDir, env)
			if err != nil {
				return nil, err
			}
			neutral, _ = r.drivers.LoadOrStore(key, n)
		}
		env = append(append([]string{}, env...), neutral.([]string)...)
	}
	cmd := exec.CommandContext(ctx, "git", append(append([]string{}, hostileConfig...), args...)...)
	cmd.Dir = dir
	cmd.Env = append(gitEnv(os.Environ()), "GIT_DIR="+gitDir)
	cmd.Env = append(cmd.Env, env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, &GitError{Args: args, Stderr: strings.TrimSpace(stderr.String()), Err: err}
	}
	return out, nil
}

// GitError is a failed git command with what it printed.
type GitError struct {
	Args   []string
	Stderr string
	Err    error
}

func (e *GitError) Error() string {
	return fmt.Sprintf("git %s: %s", e.Args[0], firstLine(e.Stderr, e.Err))
}

func (e *GitError) Unwrap() error { return e.Err }

func firstLine(s string, err error) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return err.Error()
	}
	return strings.TrimPrefix(strings.SplitN(s, "\n", 2)[0], "fatal: ")
}

// gitEnv drops variables that would point git at another repository, index
// or work tree than the one git-lease chose, and pins the C locale so that
// messages can be parsed.
func gitEnv(env []string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
			"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_PREFIX", "GIT_CEILING_DIRECTORIES",
			"GIT_DISCOVERY_ACROSS_FILESYSTEM", "LC_ALL", "LANGUAGE":
			continue
		}
		out = append(out, kv)
	}
	return append(out, "LC_ALL=C")
}
