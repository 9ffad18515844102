package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// statusView is the shape of Crabbox's status --json (the fields the
// stand-in fills).
type statusView struct {
	ID          string            `json:"id"`
	Slug        string            `json:"slug,omitempty"`
	Provider    string            `json:"provider"`
	TargetOS    string            `json:"target"`
	State       string            `json:"state"`
	ServerID    string            `json:"serverId"`
	ServerType  string            `json:"serverType"`
	Host        string            `json:"host"`
	Network     string            `json:"network"`
	SSHHost     string            `json:"sshHost"`
	SSHUser     string            `json:"sshUser"`
	SSHPort     string            `json:"sshPort"`
	SSHKey      string            `json:"sshKey"`
	IdleTimeout string            `json:"idleTimeout,omitempty"`
	ExpiresAt   string            `json:"expiresAt,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	HasHost     bool              `json:"hasHost"`
	Ready       bool              `json:"ready"`
}

func status(args []string) *exitError {
	fs := newFlags("status")
	fs.String("provider", "", "")
	id := fs.String("id", "", "")
	jsonOut := fs.Bool("json", false, "")
	wait := fs.Bool("wait", false, "")
	fs.Duration("wait-timeout", 5*time.Minute, "")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *id == "" && fs.NArg() == 1 {
		*id = fs.Arg(0)
	}
	if *id == "" {
		return fail(2, "usage: crabbox status --id <lease-id-or-slug>")
	}
	root, err := providerRoot()
	if err != nil {
		return err
	}
	b, err := loadBox(root, *id)
	if err != nil {
		return err
	}
	ready := b.State == "ready"
	view := statusView{
		ID: b.ID, Slug: b.Slug, Provider: b.Provider, TargetOS: "linux", State: b.State, ServerID: b.ID,
		ServerType: "standin", Host: "127.0.0.1", Network: "public", SSHHost: "127.0.0.1", SSHUser: "crabbox",
		SSHPort: "2222", SSHKey: "-", IdleTimeout: b.Idle, ExpiresAt: b.Expires,
		Labels: map[string]string{"lease": b.ID, "slug": b.Slug}, HasHost: true, Ready: ready,
	}
	// The stand-in's boxes never become ready by themselves: waiting on
	// one that is not ready times out at once.
	if *wait && !ready {
		return fail(5, "timed out waiting for %s to become ready", b.ID)
	}
	if *jsonOut {
		return printJSON(view)
	}
	fmt.Printf("%s slug=%s provider=%s target=linux state=%s ready=%t expires=%s\n", b.ID, b.Slug, b.Provider, b.State, ready, b.Expires)
	return nil
}

// server is the shape of an SSH-lease provider's entry in list --json.
type server struct {
	ID     int64             `json:"id"`
	Name   string            `json:"name"`
	Status string            `json:"status"`
	Labels map[string]string `json:"labels"`
}

func list(args []string) *exitError {
	fs := newFlags("list")
	provider := fs.String("provider", "", "")
	jsonOut := fs.Bool("json", false, "")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *provider == "" {
		*provider = configProvider()
	}
	if *provider == "" {
		return fail(2, "no provider selected; run crabbox providers recommend")
	}
	root, err := providerRoot()
	if err != nil {
		return err
	}
	all, err := boxes(root)
	if err != nil {
		return err
	}
	servers := []server{}
	for i, b := range all {
		if b.Provider == *provider {
			servers = append(servers, server{ID: int64(i + 1), Name: "crabbox-" + b.Slug, Status: b.State, Labels: map[string]string{"lease": b.ID, "slug": b.Slug}})
		}
	}
	if *jsonOut {
		return printJSON(servers)
	}
	for _, s := range servers {
		fmt.Printf("%s %s %s\n", s.Labels["lease"], s.Name, s.Status)
	}
	return nil
}

func claimsList(args []string) *exitError {
	fs := newFlags("claims list")
	jsonOut := fs.Bool("json", false, "")
	if err := parse(fs, args); err != nil {
		return err
	}
	all := claims()
	if *jsonOut {
		return printJSON(map[string]any{"version": 1, "source": "local-claims", "claims": all, "problems": []any{}})
	}
	for _, c := range all {
		fmt.Printf("%s slug=%s provider=%s repo=%s\n", c.LeaseID, c.Slug, c.Provider, c.RepoRoot)
	}
	return nil
}

// doctor checks the config file's permissions and the provider's auth,
// printing Crabbox's doctor --json shape; a failed check exits 1.
func doctor(args []string) *exitError {
	fs := newFlags("doctor")
	provider := fs.String("provider", "", "")
	jsonOut := fs.Bool("json", false, "")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *provider == "" {
		*provider = configProvider()
	}
	type check struct {
		Status  string            `json:"status"`
		Check   string            `json:"check"`
		Message string            `json:"message,omitempty"`
		Details map[string]string `json:"details,omitempty"`
	}
	checks := []check{{Status: "ok", Check: "provider-selection", Message: "provider=" + *provider}}
	if path := os.Getenv("CRABBOX_CONFIG"); path != "" {
		c := check{Status: "ok", Check: "config", Message: path + " permissions=0600"}
		if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
			c = check{Status: "failed", Check: "config", Message: path + " must exist with permissions 0600", Details: map[string]string{"class": "config"}}
		}
		checks = append(checks, c)
	}
	if knob("AUTH", "") == "missing" {
		checks = append(checks, check{Status: "failed", Check: "broker", Message: "not logged in", Details: map[string]string{"class": "auth", "hint": "run_crabbox_login"}})
	} else {
		checks = append(checks, check{Status: "ok", Check: "provider", Message: "provider=" + *provider + " mutation=false"})
	}
	ok := true
	for _, c := range checks {
		ok = ok && c.Status == "ok"
	}
	if *jsonOut {
		if err := printJSON(map[string]any{"ok": ok, "provider": *provider, "checks": checks}); err != nil {
			return err
		}
	} else {
		for _, c := range checks {
			fmt.Printf("%-7s %s %s\n", c.Status, c.Check, c.Message)
		}
	}
	if !ok {
		return fail(1, "")
	}
	return nil
}

func printJSON(v any) *exitError {
	if err := json.NewEncoder(os.Stdout).Encode(v); err != nil {
		return fail(1, "%v", err)
	}
	return nil
}
