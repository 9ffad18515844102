package gitlease

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/refs/refstest"
	"github.com/git-lease/git-lease/sandbox"
	"github.com/git-lease/git-lease/verify"
)

// TestCanonicalPatchIgnoresUserDiffConfig checks that the patch (and so its
// digest) does not depend on the diff settings a user may have, and that
// it parses and matches the manifest.
func TestCanonicalPatchIgnoresUserDiffConfig(t *testing.T) {
	dir := refstest.Repo(t, map[string]string{"a.txt": "one\n\ntwo\nthree\nfour\nfive\nsix\nseven\neight\n", "b.txt": "b\n"})
	repo, _ := refs.Open(dir)
	base, _ := repo.ResolveCommit("HEAD")
	must(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\n\nTWO\nthree\nfour\nfive\nsix\nseven\nEIGHT\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "b.txt"), []byte("B\n"), 0o644))
	delta := sandbox.Delta{Root: dir, Layout: sandbox.Full}
	plain, err := collect(context.Background(), repo, base, delta)
	if err != nil {
		t.Fatal(err)
	}
	order := filepath.Join(t.TempDir(), "order")
	must(t, os.WriteFile(order, []byte("b.txt\na.txt\n"), 0o644))
	for _, kv := range [][2]string{{"diff.suppressBlankEmpty", "true"}, {"diff.context", "1"}, {"diff.orderFile", order},
		{"diff.noprefix", "true"}, {"diff.mnemonicPrefix", "true"}, {"diff.algorithm", "patience"}, {"color.ui", "always"}, {"diff.relative", "true"}} {
		refstest.Git(t, dir, "config", kv[0], kv[1])
	}
	configured, err := collect(context.Background(), refsOpen(t, dir), base, delta)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(plain.Patch, configured.Patch) {
		t.Fatalf("user configuration changed the canonical patch:\n%s\n---\n%s", plain.Patch, configured.Patch)
	}
	files, err := verify.ParsePatch(plain.Patch)
	if err != nil {
		t.Fatal(err)
	}
	if err := verify.CheckPatchManifest(files, plain.Manifest); err != nil {
		t.Fatal(err)
	}
}

func refsOpen(t *testing.T, dir string) *refs.Repo {
	t.Helper()
	r, err := refs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
