package verify

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// gitDir is a scratch repository driven by the git binary, isolated from
// the user's configuration.
type gitDir struct {
	t   testing.TB
	dir string
}

func newGitDir(t testing.TB) *gitDir {
	t.Helper()
	g := &gitDir{t: t, dir: t.TempDir()}
	g.git("init", "-q")
	return g
}

func (g *gitDir) git(args ...string) string {
	g.t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "core.quotePath=true"}, args...)...)
	cmd.Dir = g.dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C")
	out, err := cmd.Output()
	if err != nil {
		g.t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

// write sets files (content, or "->target" for a symlink, or "" to remove)
// and returns the tree of the work tree.
func (g *gitDir) write(files map[string]string) string {
	g.t.Helper()
	for name := range files {
		_ = os.RemoveAll(filepath.Join(g.dir, name)) // fails only under a file that is going too
	}
	for name, content := range files {
		p := filepath.Join(g.dir, name)
		if content == "" {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			g.t.Fatal(err)
		}
		var err error
		switch {
		case strings.HasPrefix(content, "->"):
			err = os.Symlink(content[2:], p)
		case strings.HasPrefix(content, "x:"):
			err = os.WriteFile(p, []byte(content[2:]), 0o755)
		default:
			err = os.WriteFile(p, []byte(strings.TrimPrefix(content, "f:")), 0o644)
		}
		if err != nil {
			g.t.Fatal(err)
		}
	}
	g.git("add", "-A")
	return strings.TrimSpace(g.git("write-tree"))
}

func (g *gitDir) patch(a, b string) []byte {
	return []byte(g.git("diff-tree", "-p", "--binary", "--full-index", "--no-renames", "--src-prefix=a/", "--dst-prefix=b/", a, b))
}

// manifest builds a manifest from git's raw diff, which is independent of
// the patch: a change of type ("T") is one modification, as in refs.
func (g *gitDir) manifest(a, b string) *Manifest {
	m := &Manifest{Version: ManifestVersion, Base: strings.Repeat("1", 40), BaseTree: a, ResultTree: b}
	fields := strings.Split(strings.TrimSuffix(g.git("diff-tree", "-r", "-z", "--no-renames", "--full-index", a, b), "\x00"), "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		h := strings.Fields(strings.TrimPrefix(fields[i], ":"))
		status := strings.Replace(h[4], "T", "M", 1)
		m.Files = append(m.Files, FileChange{Path: fields[i+1], Status: status, OldMode: h[0], NewMode: h[1], OldBlob: h[2], NewBlob: h[3]})
	}
	return m
}

// twoTrees is a repository with a change of every kind between trees a and b.
func twoTrees(t testing.TB) (g *gitDir, a, b string) {
	g = newGitDir(t)
	a = g.write(map[string]string{
		"edit": "one\n", "modeonly": "m\n", "both": "b\n", "tc": "file\n", "emptyd": "f:",
		"d/x": "in d\n", "dir2file": "q\n", "lnk": "->f", "gone": "bye\n", "sp ace": "a\n",
		"bin": "\x00\x01binary\x02", "noeol": "no newline",
	})
	b = g.write(map[string]string{
		"edit": "two\n", "modeonly": "x:m\n", "both": "x:b\nmore\n", "tc": "->edit", "emptyd": "",
		"emptya": "f:", "d/x": "", "d": "now a file\n", "dir2file": "", "dir2file/x": "in\n",
		"lnk": "->nowhere", "gone": "", "sp ace": "a\nchanged\n", "bin": "\x00\x01binary\x03",
		"new.bin": "\x00\xff", "\xc3\xa9.txt": "accent\n", "t\tab": "tab\n", "noeol": "still none",
		"q\"uote": "q\n",
	})
	return g, a, b
}

func TestParsePatchReadsWhatGitPrints(t *testing.T) {
	g, a, b := twoTrees(t)
	files, err := ParsePatch(g.patch(a, b))
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string][]PatchFile{}
	for _, f := range files {
		byPath[f.OldPath+"|"+f.NewPath] = append(byPath[f.OldPath+"|"+f.NewPath], f)
	}
	m := g.manifest(a, b)
	blob := func(path string, old bool) string {
		for _, c := range m.Files {
			if c.Path == path && old {
				return c.OldBlob
			} else if c.Path == path {
				return c.NewBlob
			}
		}
		t.Fatalf("no %q in the manifest", path)
		return ""
	}
	for _, tc := range []struct {
		name string
		key  string
		want PatchFile
	}{
		{"a text edit", "edit|edit", PatchFile{"edit", "edit", "M", "100644", "100644", blob("edit", true), blob("edit", false), false}},
		{"a change of mode alone", "modeonly|modeonly", PatchFile{"modeonly", "modeonly", "M", "100644", "100755", "", "", false}},
		{"a change of mode and content", "both|both", PatchFile{"both", "both", "M", "100644", "100755", blob("both", true), blob("both", false), false}},
		{"an empty file added", "|emptya", PatchFile{"", "emptya", "A", ZeroMode, "100644", ZeroBlob, emptyBlob, false}},
		{"an empty file deleted", "emptyd|", PatchFile{"emptyd", "", "D", "100644", ZeroMode, emptyBlob, ZeroBlob, false}},
		{"a retargeted symlink", "lnk|lnk", PatchFile{"lnk", "lnk", "M", "120000", "120000", blob("lnk", true), blob("lnk", false), false}},
		{"a binary edit", "bin|bin", PatchFile{"bin", "bin", "M", "100644", "100644", blob("bin", true), blob("bin", false), true}},
		{"a binary added", "|new.bin", PatchFile{"", "new.bin", "A", ZeroMode, "100644", ZeroBlob, blob("new.bin", false), true}},
		{"a quoted UTF-8 name", "|\u00e9.txt", PatchFile{"", "\u00e9.txt", "A", ZeroMode, "100644", ZeroBlob, blob("\u00e9.txt", false), false}},
		{"a quoted tab", "|t\tab", PatchFile{"", "t\tab", "A", ZeroMode, "100644", ZeroBlob, blob("t\tab", false), false}},
		{"a quoted quote", "|q\"uote", PatchFile{"", "q\"uote", "A", ZeroMode, "100644", ZeroBlob, blob("q\"uote", false), false}},
		{"a name with a space", "sp ace|sp ace", PatchFile{"sp ace", "sp ace", "M", "100644", "100644", blob("sp ace", true), blob("sp ace", false), false}},
		{"a file without a final newline", "noeol|noeol", PatchFile{"noeol", "noeol", "M", "100644", "100644", blob("noeol", true), blob("noeol", false), false}},
		{"a file that became a directory", "|dir2file/x", PatchFile{"", "dir2file/x", "A", ZeroMode, "100644", ZeroBlob, blob("dir2file/x", false), false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := byPath[tc.key]; len(got) != 1 || got[0] != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	t.Run("a change of type is a deletion then an addition", func(t *testing.T) {
		var tc []PatchFile
		for _, f := range files {
			if f.OldPath == "tc" || f.NewPath == "tc" {
				tc = append(tc, f)
			}
		}
		if len(tc) != 2 || tc[0].Status != "D" || tc[0].OldMode != "100644" || tc[1].Status != "A" || tc[1].NewMode != "120000" {
			t.Fatalf("got %+v", tc)
		}
	})
}

func TestParsePatchReadsGitlinksAndEmptyPatches(t *testing.T) {
	g := newGitDir(t)
	a := g.write(map[string]string{"f": "x\n"})
	g.git("update-index", "--add", "--cacheinfo", "160000,"+strings.Repeat("ab", 20)+",sub")
	b := strings.TrimSpace(g.git("write-tree"))
	files, err := ParsePatch(g.patch(a, b))
	want := []PatchFile{{"", "sub", "A", ZeroMode, "160000", ZeroBlob, strings.Repeat("ab", 20), false}}
	if err != nil || !reflect.DeepEqual(files, want) {
		t.Fatalf("ParsePatch = %+v, %v; want %+v", files, err, want)
	}
	if err := CheckPatchManifest(files, g.manifest(a, b)); err != nil {
		t.Fatal(err)
	}
	if files, err := ParsePatch(g.patch(a, a)); err != nil || len(files) != 0 {
		t.Fatalf("empty patch: %+v, %v", files, err)
	}
}

func TestCheckPatchManifestAcceptsGitsOwnPatchAndManifest(t *testing.T) {
	g, a, b := twoTrees(t)
	files, err := ParsePatch(g.patch(a, b))
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckPatchManifest(files, g.manifest(a, b)); err != nil {
		t.Fatal(err)
	}
}

func TestCheckPatchManifestNamesTheFirstDifference(t *testing.T) {
	g, a, b := twoTrees(t)
	files, err := ParsePatch(g.patch(a, b))
	if err != nil {
		t.Fatal(err)
	}
	edit := func(path string, f func(*FileChange)) func(*Manifest) {
		return func(m *Manifest) {
			for i := range m.Files {
				if m.Files[i].Path == path {
					f(&m.Files[i])
				}
			}
		}
	}
	for _, tc := range []struct {
		name   string
		change func(*Manifest)
		want   string
	}{
		{"a path missing from the patch", func(m *Manifest) {
			m.Files = append(m.Files, FileChange{Path: "zz", Status: "A", OldMode: ZeroMode, NewMode: "100644", OldBlob: ZeroBlob, NewBlob: emptyBlob})
		}, `"zz" is in the manifest but not in the patch`},
		{"a path missing from the manifest", func(m *Manifest) { m.Files = m.Files[1:] }, "is in the patch but not in the manifest"},
		{"another new blob", edit("edit", func(c *FileChange) { c.NewBlob = emptyBlob }), `"edit": the patch has blobs`},
		{"another mode", edit("edit", func(c *FileChange) { c.NewMode = "100755" }), `"edit": the patch has modes`},
		{"another status", edit("emptya", func(c *FileChange) { c.Status = "M"; c.OldMode = "100644"; c.OldBlob = emptyBlob }), `"emptya": the patch has status A`},
		{"a blob change where the patch shows a mode change alone", edit("modeonly", func(c *FileChange) { c.NewBlob = emptyBlob }), `"modeonly": the patch has blobs`},
		{"another type", edit("tc", func(c *FileChange) { c.NewMode = "100644" }), `"tc": the patch has modes`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := g.manifest(a, b)
			tc.change(m)
			err := CheckPatchManifest(files, m)
			if !errors.Is(err, ErrPatchMismatch) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CheckPatchManifest = %v, want ErrPatchMismatch with %q", err, tc.want)
			}
		})
	}
	t.Run("a path printed twice", func(t *testing.T) {
		err := CheckPatchManifest(append(files, files[0]), g.manifest(a, b))
		if !errors.Is(err, ErrPatchMismatch) || !strings.Contains(err.Error(), "appears twice") {
			t.Fatalf("CheckPatchManifest = %v", err)
		}
	})
}
