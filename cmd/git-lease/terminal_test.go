package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// terminalControls are what a terminal acts on or reorders when printed:
// ESC and the other C0 controls but LF and TAB, DEL, C1 controls (U+009B
// is CSI) and bidi controls. Written out here, not taken from package
// escape, so that the test does not trust what it tests.
var terminalControls = regexp.MustCompile("[\x00-\x08\x0b-\x1f\x7f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")

// checkPrintable fails the test if out holds a terminal control or a byte
// that is not UTF-8 (0x9b is CSI to a terminal that reads Latin-1).
func checkPrintable(t *testing.T, what, out string) {
	t.Helper()
	if loc := terminalControls.FindStringIndex(out); loc != nil {
		t.Errorf("%s prints %q raw:\n%q", what, out[loc[0]:loc[1]], out)
	}
	if !utf8.ValidString(out) {
		t.Errorf("%s prints bytes that are not UTF-8:\n%q", what, out)
	}
}

// TestAgentTextIsEscapedOnTheTerminal runs a lease whose agent attacks the
// reviewer's terminal: its output sets the title, writes the clipboard
// (OSC 52), moves the cursor up over a line, sends CSI as U+009B and as the
// Latin-1 byte 0x9b, and reverses text with U+202E; its blocked question,
// its file names and its files hold C1 and bidi controls. Nothing git lease
// prints for a reviewer holds them raw, and logs --raw and diff --raw give
// back the agent's exact bytes.
func TestAgentTextIsEscapedOnTheTerminal(t *testing.T) {
	dir := faultRepo(t)
	release := filepath.Join(t.TempDir(), "release")
	output := "title \x1b]0;pwned\x07 clipboard \x1b]52;c;cm0gLXJmIH4K\x07\nhidden\n\x1b[1A\x1b[2Kshown csi \u009b2J rlo \u202ecod.exe latin1 \x9b\xff\n"
	content := "\x1b]0;from the diff\x07 \u202eevil\n"
	// The command goes through the record (JSON) to a detached runner,
	// so the bytes that are not UTF-8 are printf's octal escapes.
	script := fmt.Sprintf(`printf '%%s' '%s'; printf 'latin1 \233\377\n'; `+
		`printf 'blocked: approve? %s %s %s\n' > "$LEASE_STATE_FILE"; `+
		`printf '%%s' '%s' > 'evil%stxt.sh'; echo c1 > 'c1%s.txt'; `+
		`while [ ! -e '%s' ]; do sleep 0.1; done`,
		strings.TrimSuffix(output, "latin1 \x9b\xff\n"), "\u009b1A", "\u202eok", "\u2066x\u2069",
		content, "\u202e", "\u009b", release)
	id := startDetached(t, dir, "--mode", "trusted_local", "--", "sh", "-c", script)

	waitFor(t, "the agent to say it is blocked", func() bool {
		l := record(t, dir, id)
		return l.Activity != nil && l.Activity.State == "blocked"
	})
	ls := mustRun(t, dir, "ls")
	checkPrintable(t, "ls", ls)
	if !strings.Contains(ls, "running/blocked") || !strings.Contains(ls, "approve?") {
		t.Errorf("ls does not show the question:\n%s", ls)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	checkPrintable(t, "wait", mustRun(t, dir, "wait", id))

	for _, args := range [][]string{{"logs", id}, {"logs", "--follow", id}, {"ls"}, {"show", id}, {"diff", id}} {
		checkPrintable(t, strings.Join(args, " "), mustRun(t, dir, args...))
	}
	logs := mustRun(t, dir, "logs", id)
	if want := `clipboard \x1b]52;c;cm0gLXJmIH4K\x07` + "\nhidden\n" + `\x1b[1A\x1b[2Kshown csi \u009b2J rlo \u202ecod.exe latin1 \x9b\xff`; !strings.Contains(logs, want) {
		t.Errorf("logs does not show the output escaped:\n%s\nwant it to hold:\n%s", logs, want)
	}
	show := mustRun(t, dir, "show", id)
	for _, want := range []string{`A c1\u009b.txt`, `A evil\u202etxt.sh`} {
		if !strings.Contains(show, want) {
			t.Errorf("show does not list %s:\n%s", want, show)
		}
	}
	if diff := mustRun(t, dir, "diff", id); !strings.Contains(diff, `+\x1b]0;from the diff\x07 \u202eevil`) {
		t.Errorf("diff does not show the content escaped:\n%s", diff)
	}
	for _, args := range [][]string{{"logs", "--raw", id}, {"logs", "--raw", "--follow", id}} {
		if got := mustRun(t, dir, args...); got != output {
			t.Errorf("git lease %s:\n%q\nwant the agent's bytes:\n%q", strings.Join(args, " "), got, output)
		}
	}
	if diff := mustRun(t, dir, "diff", "--raw", id); !strings.Contains(diff, "+"+content) {
		t.Errorf("diff --raw does not hold the file's bytes:\n%q", diff)
	}

	// A file name with ESC quarantines the result: start, show and
	// findings name it escaped.
	out, err := runLease(t, dir, nil, "start", "--mode", "trusted_local", "--", "sh", "-c", "echo esc > 'esc\x1b[31m.txt'")
	quarantined := leaseID(out)
	if err == nil || quarantined == "" {
		t.Fatalf("a file name with ESC did not fail the lease: %v\n%s", err, out)
	}
	checkPrintable(t, "start", out)
	for _, args := range [][]string{{"show", quarantined}, {"findings"}} {
		out := mustRun(t, dir, args...)
		checkPrintable(t, strings.Join(args, " "), out)
		if !strings.Contains(out, `esc\x1b[31m.txt`) {
			t.Errorf("%s does not name the file:\n%s", strings.Join(args, " "), out)
		}
	}

	// JSON stays JSON, with the controls escaped and the text intact.
	for _, args := range [][]string{{"show", "--json", id}, {"ls", "--json"}, {"findings", "--json"}} {
		out := mustRun(t, dir, args...)
		checkPrintable(t, strings.Join(args, " "), out)
		if !json.Valid([]byte(out)) {
			t.Errorf("%s is not JSON:\n%s", strings.Join(args, " "), out)
		}
	}
	if l := record(t, dir, id); l.Result == nil || len(l.Result.Manifest) != 2 || l.Result.Manifest[1].Path != "evil\u202etxt.sh" {
		t.Errorf("show --json lost the agent's file names: %+v", l.Result)
	}
}
