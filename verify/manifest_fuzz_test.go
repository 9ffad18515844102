package verify

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func validManifest() *Manifest {
	h := strings.Repeat("ab", 20)
	return &Manifest{Version: ManifestVersion, Base: h, BaseTree: h, ResultTree: h, Files: []FileChange{
		{Path: "a", Status: "A", OldMode: ZeroMode, NewMode: "100644", OldBlob: ZeroBlob, NewBlob: h},
		{Path: "b", Status: "M", OldMode: "100644", NewMode: "100755", OldBlob: h, NewBlob: h},
		{Path: "c", Status: "D", OldMode: "120000", NewMode: ZeroMode, OldBlob: h, NewBlob: ZeroBlob},
	}}
}

func TestParseManifestRejectsTrailingData(t *testing.T) {
	good := validManifest().Marshal()
	if _, err := ParseManifest(good); err != nil {
		t.Fatal(err)
	}
	for _, tail := range []string{"]", "}", "{}", "x", `"s"`} {
		if _, err := ParseManifest(append(bytes.Clone(good), tail...)); !errors.Is(err, ErrBadManifest) {
			t.Errorf("ParseManifest with %q after it = %v, want ErrBadManifest", tail, err)
		}
	}
}

func FuzzParseManifest(f *testing.F) {
	good := validManifest().Marshal()
	f.Add(good)
	f.Add(bytes.Replace(good, []byte(`"A"`), []byte(`"M"`), 1))
	f.Add(append(bytes.Clone(good), ']'))
	f.Add([]byte(`{"version":1,"files":null}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseManifest(b)
		if err != nil {
			if !errors.Is(err, ErrBadManifest) {
				t.Fatalf("error %v does not wrap ErrBadManifest", err)
			}
			return
		}
		again := m.Marshal()
		m2, err := ParseManifest(again)
		if err != nil {
			t.Fatalf("re-parsing %s: %v", again, err)
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip changed the manifest:\n%#v\n%#v", m, m2)
		}
		if !bytes.Equal(m2.Marshal(), again) {
			t.Fatalf("Marshal is not stable:\n%s\n%s", again, m2.Marshal())
		}
	})
}
