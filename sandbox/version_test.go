package sandbox

import "testing"

func TestParseVersion(t *testing.T) {
	for in, want := range map[string]Version{"0.8.2": {0, 8, 2}, "v0.10.0": {0, 10, 0}, "1.2.3-rc.1": {1, 2, 3}, "0.8.2+abc": {0, 8, 2}, "0.46.0\n": {0, 46, 0}} {
		if got, ok := ParseVersion(in); !ok || got != want {
			t.Errorf("ParseVersion(%q) = %v, %v, want %v", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "0.8", "x.1.2", "0..2", "dev", "-1.0.0", "1.x.3"} {
		if _, ok := ParseVersion(in); ok {
			t.Errorf("ParseVersion(%q) succeeded", in)
		}
	}
	if !(Version{0, 9, 9}).Less(Version{0, 10, 0}) || (Version{1, 0, 0}).Less(Version{0, 99, 99}) || (Version{0, 8, 2}).Less(Version{0, 8, 2}) {
		t.Error("Less does not order releases")
	}
}
