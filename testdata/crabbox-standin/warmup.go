package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// warmup leases a box (or answers a replayed fixed lease ID with the same
// box) and prints Crabbox's three stdout lines.
func warmup(args []string) *exitError {
	fs := newFlags("warmup")
	provider := fs.String("provider", "", "")
	leaseID := fs.String("lease-id", "", "")
	ttl := fs.Duration("ttl", 90*time.Minute, "")
	idle := fs.Duration("idle-timeout", 30*time.Minute, "")
	fs.Bool("keep", true, "")
	slug := fs.String("slug", "", "")
	fs.Bool("reclaim", false, "")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *provider == "" {
		*provider = configProvider()
	}
	if *provider == "" {
		return fail(2, "no provider selected; run crabbox providers recommend")
	}
	repo, err := repoRoot()
	if err != nil {
		return err
	}
	root, err := providerRoot()
	if err != nil {
		return err
	}
	intent := fmt.Sprintf("provider=%s ttl=%s idle=%s slug=%s", *provider, *ttl, *idle, *slug)
	started := time.Now()
	var b box
	if *leaseID != "" {
		if !leaseIDPattern.MatchString(*leaseID) {
			return fail(2, "--lease-id must match cbx_<12 lowercase hex characters>")
		}
		if knob("FIXED_ID", "") == "unsupported" {
			return fail(2, "provider=%s does not support fixed idempotent lease IDs", *provider)
		}
		if _, err := os.Lstat(tombstone(root, *leaseID)); err == nil {
			return fail(4, "lease_id_conflict: fixed lease %s is terminal and cannot be replayed", *leaseID)
		}
		existing, err := loadBox(root, *leaseID)
		if err == nil {
			if existing.Intent != intent {
				return fail(4, "lease_id_conflict: lease %s is bound to another create intent", *leaseID)
			}
			b = existing
		}
	}
	if b.ID == "" {
		if knob("WARMUP", "") == "fail" {
			return fail(7, "provision failed: provider=%s refused to create a box", *provider)
		}
		b = box{
			ID: *leaseID, Slug: *slug, Provider: *provider, State: "provisioning", Fixed: *leaseID != "", Intent: intent,
			Expires: time.Now().Add(*ttl).UTC().Format(time.RFC3339), Idle: idle.String(),
		}
		if b.ID == "" {
			if b.ID, err = newLeaseID(root); err != nil {
				return err
			}
		}
		if b.Slug == "" {
			b.Slug = "swift-crab-" + b.ID[len(b.ID)-4:]
		}
		if err := saveBox(root, b); err != nil {
			return err
		}
	}
	if err := saveClaim(claim{
		LeaseID: b.ID, Slug: b.Slug, Provider: b.Provider, RepoRoot: repo, TargetOS: "linux",
		ClaimedAt: now(), LastUsedAt: now(), IdleTimeoutSeconds: int(idle.Seconds()),
	}); err != nil {
		return err
	}
	fmt.Printf("leased %s slug=%s provider=%s server=%s type=standin ip=127.0.0.1 idle_timeout=%s expires=%s\n",
		b.ID, b.Slug, b.Provider, b.ID, b.Idle, b.Expires)
	if knob("WARMUP", "") == "fail-after-lease" {
		return fail(5, "timed out waiting for SSH on %s", b.ID)
	}
	b.State = "ready"
	if err := saveBox(root, b); err != nil {
		return err
	}
	fmt.Printf("ready ssh=crabbox@127.0.0.1:2222 network=public workroot=/work/crabbox\n")
	fmt.Printf("warmup complete total=%s\n", time.Since(started).Round(time.Millisecond))
	return nil
}

// repoRoot is the git work tree around the current directory, which
// Crabbox requires for warmup and run.
func repoRoot() (string, *exitError) {
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", fail(2, "not inside a git repository")
	}
	return strings.TrimSpace(string(out)), nil
}
