package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"time"
)

var leaseIDPattern = regexp.MustCompile(`^cbx_[a-f0-9]{12}$`)

// box is the provider's record of one box, in <root>/boxes/<id>/box.json;
// its file system is <root>/boxes/<id>/fs.
type box struct {
	ID       string `json:"id"`
	Slug     string `json:"slug"`
	Provider string `json:"provider"`
	State    string `json:"state"` // provisioning or ready
	Fixed    bool   `json:"fixed"` // leased with --lease-id
	Intent   string `json:"intent"`
	Expires  string `json:"expiresAt"`
	Idle     string `json:"idleTimeout"`
}

// claim is a local claim, in $XDG_STATE_HOME/crabbox/claims/<id>.json, with
// the fields Crabbox's claims list shows.
type claim struct {
	LeaseID            string `json:"leaseId"`
	Slug               string `json:"slug"`
	Provider           string `json:"provider"`
	RepoRoot           string `json:"repoRoot"`
	Pond               string `json:"pond"`
	TargetOS           string `json:"targetOS"`
	WindowsMode        string `json:"windowsMode"`
	ClaimedAt          string `json:"claimedAt"`
	LastUsedAt         string `json:"lastUsedAt"`
	IdleTimeoutSeconds int    `json:"idleTimeoutSeconds"`
}

func providerRoot() (string, *exitError) {
	root := os.Getenv("STANDIN_CRABBOX_ROOT")
	if root == "" {
		return "", fail(2, "STANDIN_CRABBOX_ROOT is not set")
	}
	return root, nil
}

func boxDir(root, id string) string { return filepath.Join(root, "boxes", id) }

func boxFS(root, id string) string { return filepath.Join(boxDir(root, id), "fs") }

func tombstone(root, id string) string { return filepath.Join(root, "tombstones", id) }

// loadBox reads a box; a missing box is a not-found error (exit 4).
func loadBox(root, id string) (box, *exitError) {
	var b box
	data, err := os.ReadFile(filepath.Join(boxDir(root, id), "box.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return b, fail(4, "lease not found: %s", id)
	}
	if err != nil {
		return b, fail(7, "read box %s: %v", id, err)
	}
	if err := json.Unmarshal(data, &b); err != nil {
		return b, fail(7, "read box %s: %v", id, err)
	}
	return b, nil
}

func saveBox(root string, b box) *exitError {
	if err := os.MkdirAll(filepath.Join(boxFS(root, b.ID), "tmp"), 0o1777); err != nil {
		return fail(7, "create box: %v", err)
	}
	return writeJSON(filepath.Join(boxDir(root, b.ID), "box.json"), b)
}

// boxes lists the provider's boxes, by ID.
func boxes(root string) ([]box, *exitError) {
	entries, err := os.ReadDir(filepath.Join(root, "boxes"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fail(7, "list boxes: %v", err)
	}
	var out []box
	for _, e := range entries {
		if b, err := loadBox(root, e.Name()); err == nil {
			out = append(out, b)
		}
	}
	return out, nil
}

func claimsDir() string {
	state := os.Getenv("XDG_STATE_HOME")
	if state == "" {
		dir, _ := os.UserConfigDir()
		return filepath.Join(dir, "crabbox", "state", "claims")
	}
	return filepath.Join(state, "crabbox", "claims")
}

func saveClaim(c claim) *exitError {
	if err := os.MkdirAll(claimsDir(), 0o700); err != nil {
		return fail(2, "create claims directory: %v", err)
	}
	return writeJSON(filepath.Join(claimsDir(), c.LeaseID+".json"), c)
}

func hasClaim(id string) bool {
	_, err := os.Lstat(filepath.Join(claimsDir(), id+".json"))
	return err == nil
}

func removeClaim(id string) {
	os.Remove(filepath.Join(claimsDir(), id+".json"))
}

// claims lists the local claims, by lease ID.
func claims() []claim {
	entries, _ := os.ReadDir(claimsDir())
	out := []claim{}
	for _, e := range entries {
		var c claim
		data, err := os.ReadFile(filepath.Join(claimsDir(), e.Name()))
		if err == nil && json.Unmarshal(data, &c) == nil {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LeaseID < out[j].LeaseID })
	return out
}

func writeJSON(path string, v any) *exitError {
	data, _ := json.MarshalIndent(v, "", "  ")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fail(7, "write %s: %v", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fail(7, "write %s: %v", path, err)
	}
	return nil
}

// newLeaseID picks the next ID the provider has not handed out:
// cbx_000000000001, cbx_000000000002… Crabbox's own IDs are random; the
// stand-in's are predictable so that transcripts are stable. Each is taken
// by creating <root>/ids/<n> exclusively, so concurrent warmups differ.
func newLeaseID(root string) (string, *exitError) {
	dir := filepath.Join(root, "ids")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fail(7, "create box ID: %v", err)
	}
	for n := 1; ; n++ {
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(n)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fail(7, "create box ID: %v", err)
		}
		f.Close()
		return fmt.Sprintf("cbx_%012x", n), nil
	}
}

func now() string { return time.Now().UTC().Format(time.RFC3339) }
