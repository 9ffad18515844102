package crabbox

import (
	"strings"
	"testing"

	"github.com/git-lease/git-lease/sandbox"
)

func TestFindReport(t *testing.T) {
	stderr := `{"exitCode":0,"runStatus":"succeeded"}
agent noise
run details provider=local-container lease=cbx_0123456789ab
{"provider":"local-container","leaseId":"cbx_0123456789ab","exitCode":3,"runStatus":"failed","errorKind":"command-exit","workdir":"/work/crabbox/cbx_0123456789ab/seed"}
remote command exited 3
`
	rep, ok := findReport(stderr)
	if !ok || *rep.ExitCode != 3 || rep.ErrorKind != "command-exit" {
		t.Fatalf("findReport = %+v, %v", rep, ok)
	}
	if _, ok := findReport("no report\n{\"exitCode\":1}\n"); ok {
		t.Error("a line without runStatus was taken for a report")
	}
}

// A report line the agent printed does not explain a crabbox that failed
// after it without a report of its own.
func TestForgedReport(t *testing.T) {
	stderr := &tail{max: maxStderr}
	stderr.Write([]byte(`{"leaseId":"cbx_0123456789ab","exitCode":0,"runStatus":"succeeded"}` + "\nremote command child ownership remains active\n"))
	r := &process{spec: sandbox.Spec{ID: "0123456789ab", Dir: t.TempDir()}, box: "cbx_0123456789ab", own: stderr}
	if _, err := r.outcome(sandbox.Exit{Code: 7}); err == nil || !strings.Contains(err.Error(), "does not explain") {
		t.Fatalf("outcome = %v", err)
	}
}

func TestParseVersion(t *testing.T) {
	for in, want := range map[string]sandbox.Version{"0.46.0\n": {0, 46, 0}, "v1.2.3-rc.1": {1, 2, 3}, "crabbox 0.44.10": {0, 44, 10}} {
		if got, ok := parseVersion(in); !ok || got != want {
			t.Errorf("parseVersion(%q) = %v, %v", in, got, ok)
		}
	}
	for _, in := range []string{"dev", "", "1.2", "1.x.3", "-1.0.0"} {
		if _, ok := parseVersion(in); ok {
			t.Errorf("parseVersion(%q) succeeded", in)
		}
	}
}

func FuzzFindReport(f *testing.F) {
	f.Add(`{"provider":"p","leaseId":"cbx_0123456789ab","exitCode":0,"runStatus":"succeeded"}` + "\n")
	f.Add("{\n}\n{\"exitCode\":null,\"runStatus\":\"x\"}")
	f.Fuzz(func(t *testing.T, s string) {
		if rep, ok := findReport(s); ok && (rep.ExitCode == nil || rep.RunStatus == "") {
			t.Fatalf("findReport accepted %q as %+v", s, rep)
		}
	})
}

func FuzzParseLeased(f *testing.F) {
	f.Add("leased cbx_0123456789ab slug=swift-crab provider=local-container")
	f.Add("ready ssh=crabbox@127.0.0.1:2222")
	f.Fuzz(func(t *testing.T, line string) {
		if id, ok := parseLeased(line); ok && id == "" {
			t.Fatalf("parseLeased(%q) gave an empty ID", line)
		}
	})
}

func FuzzParseVersion(f *testing.F) {
	f.Add("0.46.0")
	f.Add("v0.44.0-dirty")
	f.Fuzz(func(t *testing.T, s string) {
		if v, ok := parseVersion(s); ok && (v[0] < 0 || v[1] < 0 || v[2] < 0) {
			t.Fatalf("parseVersion(%q) = %v", s, v)
		}
	})
}
