package crabbox

import (
	"archive/tar"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tarEntry is one entry of a test tarball.
type tarEntry struct {
	name, body, link string
	kind             byte
}

func writeTar(t *testing.T, entries ...tarEntry) string {
	t.Helper()
	name := filepath.Join(t.TempDir(), "result.tar")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.kind, Linkname: e.link, Mode: 0o644, Size: int64(len(e.body))}
		if e.kind != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.kind == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return name
}

// The box's tarball is not trusted: no entry lands outside the tree, not
// through a name and not through a symlink before it; an entry comes once;
// special files are refused; what it unpacks to is bounded.
func TestUnpackRefuses(t *testing.T) {
	outside := t.TempDir()
	cases := []struct {
		why     string
		entries []tarEntry
		max     int64
		want    string
	}{
		{"a name above the tree", []tarEntry{{name: "../x", body: "x", kind: tar.TypeReg}}, 0, "outside its tree"},
		{"an absolute name", []tarEntry{{name: "/etc/x", body: "x", kind: tar.TypeReg}}, 0, "outside its tree"},
		{"a file through a symlink out", []tarEntry{{name: "out", link: outside, kind: tar.TypeSymlink}, {name: "out/x", body: "x", kind: tar.TypeReg}}, 0, "unpack out/x"},
		{"a file over a symlink", []tarEntry{{name: "a", link: outside + "/x", kind: tar.TypeSymlink}, {name: "a", body: "x", kind: tar.TypeReg}}, 0, "twice"},
		{"a hard link out", []tarEntry{{name: "h", link: "../../etc/passwd", kind: tar.TypeLink}}, 0, "unpack h"},
		{"a fifo", []tarEntry{{name: "p", kind: tar.TypeFifo}}, 0, "neither"},
		{"too much", []tarEntry{{name: "a", body: "12345", kind: tar.TypeReg}, {name: "b", body: "12345", kind: tar.TypeReg}}, 8, "more than the 8 bytes"},
	}
	for _, c := range cases {
		root, err := os.OpenRoot(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		err = unpack(writeTar(t, c.entries...), root, c.max, func(string) bool { return true })
		root.Close()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: unpack = %v, want an error with %q", c.why, err, c.want)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("unpacking wrote outside the tree: %v", entries)
	}
}
