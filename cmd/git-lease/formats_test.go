package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/refs/refstest"
)

// The files a lease log's tree may hold, and the schema of each JSON one
// (testdata/schemas, documented in FORMATS.md). A file the table does not
// name fails the test: a new stored format must be documented first.
var logFiles = []struct {
	pattern *regexp.Regexp
	schema  string // "" for a file that is not JSON
}{
	{regexp.MustCompile(`^lease\.json$`), "lease.schema.json"},
	{regexp.MustCompile(`^findings\.json$`), "findings.schema.json"},
	{regexp.MustCompile(`^network\.json$`), "network.schema.json"},
	{regexp.MustCompile(`^result/result\.json$`), "result.schema.json"},
	{regexp.MustCompile(`^result/(manifest|promoted)\.json$`), "manifest.schema.json"},
	{regexp.MustCompile(`^receipts/(result|apply|reject|cleanup)\.dsse\.json$`), "dsse.schema.json"},
	{regexp.MustCompile(`^result/(patch|promoted)\.diff$`), ""},
	{regexp.MustCompile(`^result/checks/[0-9]+\.log$`), ""},
	{regexp.MustCompile(`^output/agent\.log$`), ""},
	{regexp.MustCompile(`^cleanup/discarded\.txt$`), ""},
	{regexp.MustCompile(`^artifacts/.`), ""},
}

// A log commit's message: a transition or an event, then its trailers.
var (
	transitionRE = regexp.MustCompile(`^lease ([0-9a-f]{12}): ([a-z]+) -> ([a-z]+)$`)
	eventRE      = regexp.MustCompile(`^lease ([0-9a-f]{12}): ([a-z]+): (\S.*)$`)
	trailerRE    = regexp.MustCompile(`^(Lease-ID|Lease-State|Lease-Event|Lease-Reason): (.*)$`)
)

func loadSchemas(t *testing.T) func(name string) *jsonschema.Schema {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "testdata", "schemas"))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	c.AssertContent()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		if err := c.AddResource("https://git-lease.dev/schemas/"+e.Name(), doc); err != nil {
			t.Fatal(err)
		}
	}
	compiled := map[string]*jsonschema.Schema{}
	return func(name string) *jsonschema.Schema {
		t.Helper()
		if s, ok := compiled[name]; ok {
			return s
		}
		s, err := c.Compile("https://git-lease.dev/schemas/" + name)
		if err != nil {
			t.Fatalf("compiling %s: %v", name, err)
		}
		compiled[name] = s
		return s
	}
}

func validate(t *testing.T, schema *jsonschema.Schema, where string, b []byte) {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Errorf("%s: not JSON: %v", where, err)
		return
	}
	if err := schema.Validate(doc); err != nil {
		t.Errorf("%s does not match its schema: %v", where, err)
	}
}

// validateEnvelope checks a DSSE envelope and the in-toto statement in it.
func validateEnvelope(t *testing.T, schemas func(string) *jsonschema.Schema, where string, b []byte) {
	t.Helper()
	validate(t, schemas("dsse.schema.json"), where, b)
	var env struct{ Payload string }
	if err := json.Unmarshal(b, &env); err != nil {
		return
	}
	st, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		t.Errorf("%s: payload: %v", where, err)
		return
	}
	validate(t, schemas("statement.schema.json"), where+" (statement)", st)
}

// checkLogCommit checks one commit of a lease log: its message and every
// file of its tree.
func checkLogCommit(t *testing.T, dir string, schemas func(string) *jsonschema.Schema, id, commit string) {
	t.Helper()
	msg := refstest.Git(t, dir, "log", "-1", "--format=%B", commit)
	lines := strings.Split(msg, "\n")
	m := transitionRE.FindStringSubmatch(lines[0])
	if m == nil {
		m = eventRE.FindStringSubmatch(lines[0])
	}
	if m == nil || m[1] != id {
		t.Errorf("log commit %s: subject %q is neither a transition nor an event of %s", commit, lines[0], id)
	}
	trailers := map[string]string{}
	for _, l := range lines[1:] {
		if l == "" {
			continue
		}
		tm := trailerRE.FindStringSubmatch(l)
		if tm == nil {
			t.Errorf("log commit %s: %q is not a documented trailer", commit, l)
			continue
		}
		trailers[tm[1]] = tm[2]
	}
	if trailers["Lease-ID"] != id || trailers["Lease-State"] == "" {
		t.Errorf("log commit %s: trailers %v lack Lease-ID %s or Lease-State", commit, trailers, id)
	}
	for _, path := range strings.Split(refstest.Git(t, dir, "ls-tree", "-r", "--name-only", commit), "\n") {
		known := false
		for _, f := range logFiles {
			if !f.pattern.MatchString(path) {
				continue
			}
			known = true
			if f.schema == "" {
				break
			}
			b := []byte(refstest.Git(t, dir, "cat-file", "blob", commit+":"+path))
			where := commit[:12] + ":" + path
			if f.schema == "dsse.schema.json" {
				validateEnvelope(t, schemas, where, b)
			} else {
				validate(t, schemas(f.schema), where, b)
			}
			break
		}
		if !known {
			t.Errorf("log commit %s holds %s, a file FORMATS.md does not document", commit, path)
		}
	}
}

// A revocation decision's message, and its trailers.
var (
	revocationRE        = regexp.MustCompile(`^lease revocations: (revoke|lift) (this repository|mission \S.*)$`)
	revocationTrailerRE = regexp.MustCompile(`^(Lease-Revocation|Lease-Scope|Lease-Policy|Lease-Reason): (.*)$`)
)

// checkRevocationCommit checks one decision of the revocation log: its
// message and its tree, which holds revocations.json alone.
func checkRevocationCommit(t *testing.T, dir string, schemas func(string) *jsonschema.Schema, commit string) {
	t.Helper()
	lines := strings.Split(refstest.Git(t, dir, "log", "-1", "--format=%B", commit), "\n")
	if !revocationRE.MatchString(lines[0]) {
		t.Errorf("revocation commit %s: subject %q is not a decision", commit, lines[0])
	}
	for _, l := range lines[1:] {
		if l != "" && !revocationTrailerRE.MatchString(l) {
			t.Errorf("revocation commit %s: %q is not a documented trailer", commit, l)
		}
	}
	if files := refstest.Git(t, dir, "ls-tree", "-r", "--name-only", commit); files != "revocations.json" {
		t.Errorf("revocation commit %s holds %q, not revocations.json alone", commit, files)
	}
	validate(t, schemas("revocations.schema.json"), commit[:12]+":revocations.json", []byte(refstest.Git(t, dir, "cat-file", "blob", commit+":revocations.json")))
}

// TestStoredFormatsMatchTheirSchemas runs leases through every kind of
// record (a result with network evidence, apply, reject, a quarantined
// result, cleanup) with the real binary, then checks every commit of every
// log, and every note, against the schemas FORMATS.md documents.
func TestStoredFormatsMatchTheirSchemas(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sandboxed leases")
	}
	dir := faultRepo(t)
	config := os.Getenv("XDG_CONFIG_HOME")
	if err := os.MkdirAll(filepath.Join(config, "git-lease"), 0o755); err != nil {
		t.Fatal(err)
	}
	// One allowed destination, so that the lease has a proxy, which
	// refuses the IP literal the agent asks for; a preset with a setting.
	if err := os.WriteFile(filepath.Join(config, "git-lease", "policy.toml"), []byte("[network]\nallow = [\"127.0.0.1:1\"]\n[agents.shell]\ncommand = [\"/bin/sh\", \"-c\", \"{prompt}\"]\nenv = { PRESET_SETTING = \"1\" }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	applied := startLease(t, dir, `echo changed >> a.txt; echo new > c.txt; curl -s --max-time 5 http://10.1.2.3/ >/dev/null; true`)
	mustRun(t, dir, "apply", applied)
	rejected := leaseID(mustRun(t, dir, "start", "-q", "--agent", "shell", "--prompt", `echo other > b.txt`))
	mustRun(t, dir, "reject", "--reason", "not this way", rejected)
	out, err := runLease(t, dir, nil, "start", "-q", "--", "sh", "-c", `unshare -r true 2>/dev/null; mkdir -p .github/workflows && echo 'on: push' > .github/workflows/x.yml && echo q >> b.txt`)
	quarantined := leaseID(out)
	if err == nil || quarantined == "" {
		t.Fatalf("a protected path did not quarantine the result (%v):\n%s", err, out)
	}
	// A failed agent's work, taken to review on request (partial_collect).
	out, err = runLease(t, dir, nil, "start", "-q", "--", "sh", "-c", `echo half > d.txt; exit 3`)
	partial := leaseID(out)
	if err == nil || partial == "" {
		t.Fatalf("a failing agent's lease did not fail (%v):\n%s", err, out)
	}
	mustRun(t, dir, "collect", "--partial", partial)
	child := leaseID(mustRun(t, dir, "start", "-q", "--parent", applied, "--", "sh", "-c", "echo child > e.txt"))
	for _, id := range []string{applied, rejected, quarantined, partial, child} {
		mustRun(t, dir, "cleanup", id)
	}

	schemas := loadSchemas(t)
	seen := map[string]bool{}
	for _, id := range []string{applied, rejected, quarantined, partial, child} {
		for _, commit := range strings.Split(refstest.Git(t, dir, "rev-list", "refs/leases/"+id), "\n") {
			checkLogCommit(t, dir, schemas, id, commit)
		}
		for _, path := range strings.Split(refstest.Git(t, dir, "ls-tree", "-r", "--name-only", "refs/leases/"+id), "\n") {
			seen[path] = true
		}
	}
	// The scenario must reach the records it claims to check.
	for _, path := range []string{"network.json", "findings.json", "receipts/apply.dsse.json", "receipts/reject.dsse.json", "receipts/cleanup.dsse.json", "result/result.json"} {
		if !seen[path] {
			t.Errorf("no lease log holds %s: the scenario no longer makes it", path)
		}
	}
	if l := refstest.Git(t, dir, "show", "refs/leases/"+applied+":lease.json"); !strings.Contains(l, `"children"`) {
		t.Errorf("the parent's record names no children:\n%s", l)
	}
	if l := refstest.Git(t, dir, "show", "refs/leases/"+rejected+":lease.json"); !strings.Contains(l, `"agent_env"`) {
		t.Errorf("the preset's lease records no agent_env:\n%s", l)
	}
	if f := refstest.Git(t, dir, "show", "refs/leases/"+quarantined+":findings.json"); !strings.Contains(f, `"attempt"`) {
		t.Errorf("the quarantined lease's findings hold no escape attempt:\n%s", f)
	}
	// The gate record the first start copied from the user's store.
	validate(t, schemas("gate.schema.json"), "gate.json", []byte(refstest.Git(t, dir, "show", "refs/lease-gates/bwrap/headless:gate.json")))
	// Revocation decisions: a mission's, the repository's, a lift.
	mustRun(t, dir, "revoke", "--mission", "T-1", "--reason", "scope changed")
	mustRun(t, dir, "revoke", "--cancel", "--reason", "incident")
	mustRun(t, dir, "unrevoke", "--mission", "T-1")
	decisions := strings.Split(refstest.Git(t, dir, "rev-list", refs.RevocationsRef), "\n")
	if len(decisions) != 3 {
		t.Fatalf("%d revocation decisions recorded, want 3", len(decisions))
	}
	for _, commit := range decisions {
		checkRevocationCommit(t, dir, schemas, commit)
	}
	notes := refstest.Git(t, dir, "notes", "--ref", "leases", "list")
	if notes == "" {
		t.Fatal("no notes on result commits")
	}
	for _, line := range strings.Split(notes, "\n") {
		blob, object, _ := strings.Cut(line, " ")
		validateEnvelope(t, schemas, "note on "+object, []byte(refstest.Git(t, dir, "cat-file", "blob", blob)))
	}
}
