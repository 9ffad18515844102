// Command crabbox-standin stands in for the Crabbox CLI (openclaw/crabbox,
// checked against 0.46.0, commit 0bba5f7d) in git-lease's tests, where
// Crabbox cannot be installed. It speaks the part of Crabbox's contract that
// git-lease uses, with Crabbox's flags, output lines, JSON shapes and exit
// codes, and keeps its "boxes" in local directories.
//
//	crabbox --version | version
//	crabbox doctor   [--provider P] --json
//	crabbox warmup   --provider P [--lease-id cbx_<12 hex>] [--ttl D] [--idle-timeout D] [--keep] [--slug S]
//	crabbox run      --id ID [--provider P] [--stop-after never] [--timing-json] [--no-sync]
//	                 [--capture-stdout FILE] [--capture-stderr FILE]
//	                 [--allow-env NAME]… [--env-from-profile FILE]… -- ARGV…
//	crabbox status   --id ID [--provider P] [--json] [--wait] [--wait-timeout D]   (inspect: the same)
//	crabbox list     [--provider P] --json
//	crabbox claims list --json
//	crabbox cp       --id ID [--provider P] [-L] SRC DST   (exactly one of them SANDBOX:PATH)
//	crabbox stop     [--provider P] (--id ID | ID)          (release: the same)
//
// Where things live, as in Crabbox: the provider's side (boxes, fixed-ID
// tombstones) under $STANDIN_CRABBOX_ROOT, which plays the cloud; local
// claims under $XDG_STATE_HOME/crabbox/claims/<id>.json. Each box has its
// own file system directory; a run syncs the current repository (git
// ls-files --cached --others --exclude-standard, minus Crabbox's built-in
// excludes such as node_modules, .cache or .venv at any depth and what a
// .crabboxignore names, as Crabbox 0bba5f7d does) to
// /work/crabbox/<id>/<repo> in it, keeping its sync state in .crabbox/
// there (sync-manifest, sync-fingerprint, the finalize tokens,
// git-hydrate-base, as Crabbox 0bba5f7d does); with --no-sync it only makes
// that directory and removes its .crabbox/sync-fingerprint. It runs ARGV
// there directly (no shell) with an empty stdin (Crabbox runs it with ssh
// -n) and the remote stdout and stderr on its own, or each in the local
// file --capture-stdout/--capture-stderr names (replaced by a new file;
// "capturing …" and "captured …" lines on stderr, as Crabbox 0bba5f7d's
// run_capture.go); then it prints the timing JSON as one line on stderr,
// and "remote command exited N" after it when N is not 0, exiting N (after
// writing a failure bundle into .crabbox/captures/ of its own working
// directory, as Crabbox 0bba5f7d's writeLocalFailureBundle does). Boxes
// have a /tmp. Downloads with cp carry regular files and directories only,
// with modes 0644 and 0755, as Crabbox's hardened download does (rsync
// --no-links --no-perms); uploads keep modes (rsync -a).
// Config: $CRABBOX_CONFIG, else ./crabbox.yaml and ./.crabbox.yaml; only a
// top-level "provider:" line is read (a --provider flag wins).
// Like Crabbox, it acts on a CRABBOX_* variable over its config file:
// CRABBOX_LOCAL_CONTAINER_DOCKER_SOCKET=1 mounts the host's Docker socket
// into the box (here: the command gets DOCKER_HOST pointing at it).
//
// Exit codes, as Crabbox: 0 ok; 2 usage or config; 3 auth; 4 not found or
// lease_id_conflict; 5 wait timeout; 7 provider failure; any other code is
// the remote command's own.
//
// Knobs (environment variables, named STANDIN_CRABBOX_* rather than
// CRABBOX_* because git-lease passes no CRABBOX_* variable that trusted
// policy does not name):
//
//	STANDIN_CRABBOX_ROOT         the provider's directory (required by box commands)
//	STANDIN_CRABBOX_LOG          append one JSON line per invocation: argv, cwd,
//	                             and the CRABBOX_CONFIG and XDG_STATE_HOME it saw
//	STANDIN_CRABBOX_VERSION      the version --version prints (default 0.46.0)
//	STANDIN_CRABBOX_AUTH=missing every provider command exits 3 (not logged in)
//	                             and doctor reports a failed auth check
//	STANDIN_CRABBOX_FIXED_ID=unsupported  warmup --lease-id exits 2, as for
//	                             providers without fixed lease IDs
//	STANDIN_CRABBOX_WARMUP=fail  warmup exits 7 before leasing anything
//	STANDIN_CRABBOX_WARMUP=fail-after-lease  warmup prints its leased line,
//	                             leaves the box provisioning and exits 5
//	STANDIN_CRABBOX_RUN_TIMEOUT=D  a run longer than D is killed and reported
//	                             with errorKind timeout
//	STANDIN_CRABBOX_VANISH=run   the box disappears (as if expired) when a run
//	                             starts: the run exits 4 without a report
//	STANDIN_CRABBOX_CP_DELAY=D   cp sleeps D before each file (a slow copy)
//	STANDIN_CRABBOX_STOP=notfound  stop removes the box but exits 4 "not found"
//	STANDIN_CRABBOX_STOP=leave   stop says it deleted the box but leaves it
//
// IDs the stand-in chooses (warmup without --lease-id) are handed out in
// order, cbx_000000000001 first, rather than at random as Crabbox does, so
// that transcripts are stable.
//
// A fixed --lease-id is bound to its create intent (provider, TTL, idle
// timeout): replaying the same intent answers with the same box, a different
// one exits 4 with lease_id_conflict, and a stopped fixed ID stays refused.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

const defaultVersion = "0.46.0"

// exitError ends the program with code after printing message on stderr.
type exitError struct {
	code    int
	message string
}

func (e *exitError) Error() string { return e.message }

func fail(code int, format string, args ...any) *exitError {
	return &exitError{code: code, message: fmt.Sprintf(format, args...)}
}

func main() {
	args := os.Args[1:]
	logInvocation(args)
	err := dispatch(args)
	if err != nil {
		if err.message != "" {
			fmt.Fprintln(os.Stderr, err.message)
		}
		os.Exit(err.code)
	}
}

func dispatch(args []string) *exitError {
	if len(args) == 0 {
		return fail(2, "missing command")
	}
	switch args[0] {
	case "--version", "-v", "version":
		fmt.Println(knob("VERSION", defaultVersion))
		return nil
	case "claims":
		if len(args) < 2 || args[1] != "list" {
			return fail(2, "usage: crabbox claims list [--json]")
		}
		return claimsList(args[2:])
	case "doctor":
		return doctor(args[1:])
	}
	commands := map[string]func([]string) *exitError{
		"warmup": warmup, "run": runCommand, "status": status, "inspect": status,
		"list": list, "cp": copyCommand, "stop": stop, "release": stop,
	}
	command, ok := commands[args[0]]
	if !ok {
		return fail(2, "unknown command %q", args[0])
	}
	if knob("AUTH", "") == "missing" {
		return fail(3, "broker authentication failed: not logged in; run crabbox login --url <broker-url>")
	}
	return command(args[1:])
}

// knob reads STANDIN_CRABBOX_<name>.
func knob(name, fallback string) string {
	if v := os.Getenv("STANDIN_CRABBOX_" + name); v != "" {
		return v
	}
	return fallback
}

// newFlags is a flag set that reports errors the way Crabbox does (exit 2).
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

func parse(fs *flag.FlagSet, args []string) *exitError {
	if err := fs.Parse(args); err != nil {
		return fail(2, "%v", err)
	}
	return nil
}

// configProvider is the top-level provider of the config file in use.
func configProvider() string {
	paths := []string{"crabbox.yaml", ".crabbox.yaml"}
	if explicit := os.Getenv("CRABBOX_CONFIG"); explicit != "" {
		paths = []string{explicit}
	}
	provider := ""
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "provider:"); ok {
				provider = strings.Trim(strings.TrimSpace(v), `"'`)
			}
		}
	}
	return provider
}

func logInvocation(args []string) {
	path := os.Getenv("STANDIN_CRABBOX_LOG")
	if path == "" {
		return
	}
	cwd, _ := os.Getwd()
	line, _ := json.Marshal(map[string]any{
		"argv": args, "cwd": cwd,
		"config": os.Getenv("CRABBOX_CONFIG"), "state": os.Getenv("XDG_STATE_HOME"),
	})
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	f.Write(append(line, '\n'))
}
