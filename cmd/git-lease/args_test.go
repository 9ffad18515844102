package main

import (
	"reflect"
	"testing"
)

func TestPermuteMovesFlagsBeforeArguments(t *testing.T) {
	app := newApp()
	cases := []struct{ in, want []string }{
		{[]string{"git-lease", "show", "3f9c", "--json"}, []string{"git-lease", "show", "--json", "3f9c"}},
		{[]string{"git-lease", "start", "--mode", "trusted_local", "--", "sh", "-c", "x --json"},
			[]string{"git-lease", "start", "--mode", "trusted_local", "--", "sh", "-c", "x --json"}},
		{[]string{"git-lease", "ls", "--mission", "T-1", "--json"}, []string{"git-lease", "ls", "--mission", "T-1", "--json"}},
		{[]string{"git-lease", "start", "--base=main", "--", "make"}, []string{"git-lease", "start", "--base=main", "--", "make"}},
		{[]string{"git-lease", "nosuch", "x", "--json"}, []string{"git-lease", "nosuch", "x", "--json"}},
		{[]string{"git-lease", "hooks", "install", "--server"}, []string{"git-lease", "hooks", "install", "--server"}},
		{[]string{"git-lease", "push", "origin", "3f9c"}, []string{"git-lease", "push", "origin", "3f9c"}},
		{[]string{"git-lease", "fetch", "origin", "--json"}, []string{"git-lease", "fetch", "--json", "origin"}},
	}
	for _, tc := range cases {
		if got := permute(app, tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("permute(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
