package gitlease

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/git-lease/git-lease/sandbox"
	"github.com/git-lease/git-lease/sandbox/agentfs"
)

// agentfsOrSkip skips a test where the agentfs provider cannot run.
func agentfsOrSkip(t *testing.T) {
	t.Helper()
	if err := (agentfs.Provider{}).Check(); err != nil {
		t.Skip(err)
	}
}

// compareAgent is an agent that does every kind of change, including a
// build-like burst of files and a directory deleted and made again.
const compareAgent = `set -e
echo changed >> README
rm gone.txt
mkdir -p src/new && printf 'package x\n' > src/new/x.go
mv src/old.go src/renamed.go
chmod +x run.sh
ln -s README link
for i in $(seq 1 200); do echo $i > gen/f$i.txt; done
rm -r tree && mkdir tree && echo again > tree/y
printf 'same\n' > same.txt
`

// TestAgentFSAndOverlayGiveTheSameResult runs one agent on the overlay
// provider and on the agentfs provider, from the same base, and compares
// their verified results.
func TestAgentFSAndOverlayGiveTheSameResult(t *testing.T) {
	agentfsOrSkip(t)
	files := map[string]string{"README": "hello\n", "gone.txt": "bye\n", "src/old.go": "package old\n",
		"run.sh": "#!/bin/sh\n", "tree/x": "x\n", "same.txt": "same\n", "gen/keep": "k\n"}
	results := map[sandbox.ProviderName]*Result{}
	for _, provider := range []sandbox.ProviderName{sandbox.AgentFS, sandbox.Bwrap} {
		repo, _ := sandboxRepo(t, files, "provider = \""+string(provider)+"\"\n")
		x, out := runAgent(t, repo, compareAgent)
		if x.Lease.State != Review || x.Lease.Result == nil || x.Lease.Result.Status != "ok" {
			t.Fatalf("%s: lease is %s (%s)\n%s", provider, x.Lease.State, x.Lease.Reason, out)
		}
		if x.Lease.Provider != provider {
			t.Fatalf("the lease ran on %s, not %s", x.Lease.Provider, provider)
		}
		results[provider] = x.Lease.Result
		if provider == "agentfs" {
			checkKeptDatabase(t, x)
		}
	}
	a, b := results["bwrap"], results["agentfs"]
	if a.Tree != b.Tree || a.PatchDigest != b.PatchDigest || !reflect.DeepEqual(a.Manifest, b.Manifest) {
		t.Errorf("the results differ:\noverlay: %s %s %v\nagentfs: %s %s %v", a.Tree, a.Summary, a.Manifest, b.Tree, b.Summary, b.Manifest)
	}
	if len(a.Manifest) != 209 {
		t.Errorf("the result changes %d files, want 209: %s", len(a.Manifest), a.Summary)
	}
}

// checkKeptDatabase cleans up an agentfs lease and checks that its
// database is kept, named in the cleanup receipt, and still reads as the
// delta the result came from.
func checkKeptDatabase(t *testing.T, x *Execution) {
	t.Helper()
	c, _, err := cleanupHere(t.Context(), x)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(c.Receipt, func(item CleanupItem) bool { return item.Resource == "agentfs-record" })
	if i < 0 || c.Receipt[i].Action != "kept" || !strings.Contains(c.Receipt[i].Detail, "/agentfs/"+string(x.Lease.ID)+".db (") {
		t.Fatalf("the cleanup receipt does not name the kept database: %+v", c.Receipt)
	}
	kept := x.Repo.LeaseDir("agentfs", string(x.Lease.ID)+".db")
	if _, err := os.Stat(kept); err != nil {
		t.Fatalf("the database is not kept: %v", err)
	}
	if _, err := os.Stat(x.RunDir()); err == nil {
		t.Fatalf("the run directory outlived cleanup")
	}
	// The kept database, written by the Go SDK's OverlayFS as the agent
	// worked, imports as the same result.
	y, err := Import(t.Context(), x.Repo, ImportOptions{Database: kept, Base: x.Lease.Base})
	if err != nil {
		t.Fatal(err)
	}
	if y.Lease.State != Review || y.Lease.Result.Tree != x.Lease.Result.Tree || y.Lease.Mode != TrustedLocal {
		t.Fatalf("the import is %s %s (%s), the lease's result %s", y.Lease.State, y.Lease.Mode, y.Lease.Reason, x.Lease.Result.Tree)
	}
}

// TestImportsADatabaseTheNPMSDKWrote imports a database that AgentFS's npm
// SDK (its own native engine) wrote, as an agent elsewhere would leave it.
func TestImportsADatabaseTheNPMSDKWrote(t *testing.T) {
	node, err := exec.LookPath("node")
	modules := os.Getenv("AGENTFS_SDK_MODULES")
	if err != nil || modules == "" {
		t.Skip("node and agentfs-sdk@0.6.4 in $AGENTFS_SDK_MODULES are needed: scripts/test.sh installs the SDK with npm")
	}
	db := filepath.Join(t.TempDir(), "delta.db")
	if out, err := exec.Command(node, filepath.Join("..", "testdata", "agentfs", "npm-write.mjs"), modules, db).CombinedOutput(); err != nil {
		t.Fatalf("the npm SDK did not write its database: %v\n%s", err, out)
	}
	repo, _ := sandboxRepo(t, map[string]string{"edit.txt": "before\n", "keep.txt": "kept\n"}, "")
	head, err := repo.ResolveCommit("HEAD")
	must(t, err)
	x, err := Import(t.Context(), repo, ImportOptions{Database: db, Base: head.String()})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range x.Lease.Result.Manifest {
		got = append(got, f.Status+" "+f.Path+" "+f.NewMode)
	}
	want := []string{"A big.bin 100644", "M edit.txt 100644", "A link 120000", "A src/main.go 100644"}
	if x.Lease.State != Review || !reflect.DeepEqual(got, want) {
		t.Fatalf("the import is %s (%s) with %q, want review with %q", x.Lease.State, x.Lease.Reason, got, want)
	}
}

// agentfsPolicy runs a lease on the agentfs provider.
const agentfsPolicy = "provider = \"agentfs\"\n"

// The bwrap attacks, against a sandbox whose /work is served over FUSE.
func TestSandboxOnAgentFSCannotWriteOutsideItsTree(t *testing.T) {
	agentfsOrSkip(t)
	sandboxCannotWriteOutsideItsTree(t, agentfsPolicy)
}

func TestSandboxOnAgentFSCannotUseInheritedDescriptors(t *testing.T) {
	agentfsOrSkip(t)
	sandboxCannotUseInheritedDescriptors(t, agentfsPolicy)
}

func TestSandboxOnAgentFSCannotSeeHostPaths(t *testing.T) {
	agentfsOrSkip(t)
	sandboxCannotSeeHostPaths(t, agentfsPolicy)
}

// TestSandboxOnAgentFSCannotWriteTheBase has the agent overwrite, chmod,
// link over and delete the base's files and make what a result refuses: the
// exported base the FUSE server reads stays as it was, and the changes are
// the database's.
func TestSandboxOnAgentFSCannotWriteTheBase(t *testing.T) {
	agentfsOrSkip(t)
	repo, _ := sandboxRepo(t, map[string]string{"a.txt": "a\n", "dir/b.txt": "b\n"}, agentfsPolicy)
	script := "echo overwritten > /work/a.txt; chmod 600 /work/dir/b.txt; ln -s /etc /work/etc-link; rm -r /work/dir; ln -s a.txt /work/a2\n" +
		"mkdir /work/d2 && echo d > /work/d2/f && mv /work/d2 /work/d3\n" +
		attempt("fifo", "mkfifo /work/fifo") +
		attempt("device", "mknod /work/null c 1 3") +
		attempt("through-symlink", "echo x > /work/etc-link/lease-escape") +
		"rm /work/etc-link\n"
	x, out := runAgent(t, repo, script)
	requireBlocked(t, out, "fifo", "device", "through-symlink")
	if _, err := os.Lstat("/etc/lease-escape"); err == nil {
		t.Error("/etc/lease-escape was made on the host")
	}
	base := filepath.Join(x.RunDir(), "sandbox", "base")
	for p, want := range map[string]string{"a.txt": "a\n", "dir/b.txt": "b\n"} {
		b, err := os.ReadFile(filepath.Join(base, p))
		if err != nil || string(b) != want {
			t.Errorf("the base's %s reads %q, %v", p, b, err)
		}
	}
	if st, err := os.Stat(filepath.Join(base, "dir/b.txt")); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("the base's dir/b.txt is %v, %v", st.Mode(), err)
	}
	var got []string
	for _, f := range x.Lease.Result.Manifest {
		got = append(got, f.Status+" "+f.Path)
	}
	want := []string{"M a.txt", "A a2", "A d3/f", "D dir/b.txt"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the result is %q, want %q", got, want)
	}
}

// TestSandboxOnAgentFSFailsClosedWithoutFUSE: where FUSE cannot be
// mounted (here, for anyone but root), a lease on agentfs never starts,
// and says why in one line.
func TestSandboxOnAgentFSFailsClosedWithoutFUSE(t *testing.T) {
	if (agentfs.Provider{}).Check() == nil {
		t.Skip("FUSE can be mounted here: the provider does not fail")
	}
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, agentfsPolicy)
	x, err := Start(t.Context(), repo, StartOptions{Mode: Sandboxed, Command: []string{"true"}})
	if x != nil || !errors.Is(err, sandbox.ErrUnavailable) || strings.Contains(err.Error(), "\n") ||
		!strings.Contains(err.Error(), "serves /work over FUSE, which is not available here") {
		t.Fatalf("start on agentfs without FUSE: %v (lease %v)", err, x)
	}
	if refs, _ := repo.Git(t.Context(), nil, "for-each-ref", "refs/leases/"); len(refs) > 0 {
		t.Fatalf("a lease was recorded: %s", refs)
	}
}
