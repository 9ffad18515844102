package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// standinKnobs are the Crabbox stand-in's knobs (see
// testdata/crabbox-standin/main.go), cleared for every test.
var standinKnobs = []string{"VERSION", "AUTH", "FIXED_ID", "WARMUP", "RUN_TIMEOUT", "VANISH", "CP_DELAY", "STOP"}

// standinEnv points the Crabbox stand-in at a new provider directory (its
// "cloud") with its invocation log inside, and clears every knob.
func standinEnv(t *testing.T, cloud string) {
	if err := os.MkdirAll(cloud, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("STANDIN_CRABBOX_ROOT", cloud)
	t.Setenv("STANDIN_CRABBOX_LOG", filepath.Join(cloud, "invocations.log"))
	for _, knob := range standinKnobs {
		t.Setenv("STANDIN_CRABBOX_"+knob, "")
	}
}

// standinCalls reads the stand-in's invocation log: one argv per call, in
// order, keeping the calls whose command (first argument) is in commands,
// or all of them when commands is empty.
func standinCalls(commands ...string) ([][]string, error) {
	f, err := os.Open(os.Getenv("STANDIN_CRABBOX_LOG"))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var calls [][]string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var inv struct {
			Argv []string `json:"argv"`
		}
		if err := json.Unmarshal(sc.Bytes(), &inv); err != nil {
			return nil, fmt.Errorf("the stand-in's log: %v", err)
		}
		if len(inv.Argv) > 0 && (len(commands) == 0 || slices.Contains(commands, inv.Argv[0])) {
			calls = append(calls, inv.Argv)
		}
	}
	return calls, sc.Err()
}

// crabboxCallsCmd is the transcripts' `crabbox-calls COMMAND…`: the
// stand-in's invocations of those commands, one per line, as typed.
func crabboxCallsCmd(args []string, _ string) ([]byte, error) {
	calls, err := standinCalls(args...)
	if err != nil {
		return nil, err
	}
	var out []byte
	for _, argv := range calls {
		out = fmt.Appendf(out, "crabbox %s\n", strings.Join(argv, " "))
	}
	return out, nil
}

// crabboxBoxesCmd is the transcripts' `crabbox-boxes`: the boxes the
// stand-in's provider holds, one "ID state" per line, or "no boxes".
func crabboxBoxesCmd(_ []string, _ string) ([]byte, error) {
	dir := filepath.Join(os.Getenv("STANDIN_CRABBOX_ROOT"), "boxes")
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	var out []byte
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name(), "box.json"))
		if err != nil {
			return nil, err
		}
		var b struct {
			State string `json:"state"`
		}
		if err := json.Unmarshal(data, &b); err != nil {
			return nil, err
		}
		out = fmt.Appendf(out, "%s %s\n", e.Name(), b.State)
	}
	if len(out) == 0 {
		out = []byte("no boxes\n")
	}
	return out, nil
}
