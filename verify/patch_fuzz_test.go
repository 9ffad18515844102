package verify

import (
	"bytes"
	"errors"
	"testing"
)

func FuzzParsePatch(f *testing.F) {
	g, a, b := twoTrees(f)
	for _, p := range [][]byte{g.patch(a, b), g.patch(b, a)} {
		f.Add(p)
		// Each file on its own too: small seeds mutate into more shapes.
		body := bytes.TrimSuffix(bytes.TrimPrefix(p, []byte("diff --git ")), []byte("\n"))
		for _, section := range bytes.Split(body, []byte("\ndiff --git ")) {
			f.Add([]byte("diff --git " + string(section) + "\n"))
		}
	}
	f.Add([]byte("diff --git \"a/\\303\\251\" \"b/\\303\\251\"\nnew file mode 100644\nindex 0000000000000000000000000000000000000000..e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\n"))
	f.Add([]byte("diff --git a/x b/x\nold mode 100644\nnew mode 100755\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, b []byte) {
		files, err := ParsePatch(b)
		if err != nil {
			if !errors.Is(err, ErrBadPatch) {
				t.Fatalf("error %v does not wrap ErrBadPatch", err)
			}
			return
		}
		for _, pf := range files {
			if c := pf.change(); c.Path == "" || (pf.OldBlob != "" && c.check() != nil) {
				t.Fatalf("ParsePatch accepted an inconsistent file %+v", pf)
			}
		}
	})
}

func FuzzCheckGitmodules(f *testing.F) {
	for _, seed := range []string{
		"[submodule \"lib\"]\n\tpath = lib\n\turl = https://example.com/lib.git\n",
		"[submodule \"../x\"]\n\tpath = \"a\\tb\" ; c\n\tupdate = !x\n",
		"\ufeff[Sub \"a\\\"b\"]\r\n\tk = v\\\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, fd := range CheckGitmodules(b) {
			if fd.Rule != RuleGitmodules || fd.Path != gitmodulesFile || fd.Detail == "" {
				t.Fatalf("finding %+v", fd)
			}
		}
	})
}
