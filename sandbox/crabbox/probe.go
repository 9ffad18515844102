package crabbox

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/git-lease/git-lease/sandbox"
)

// minVersion is the oldest Crabbox with everything this adapter uses:
// `claims list --json` arrived in 0.44.0 (run --timing-json with errorKind,
// --stop-after and warmup --lease-id are older).
var minVersion = sandbox.Version{0, 44, 0}

// checkVersion fails closed, with ErrUnavailable, when crabbox is missing,
// does not answer --version, or is older than minVersion. A development
// build ("dev") has no comparable version and is refused too.
func (p Provider) checkVersion(ctx context.Context, spec sandbox.Spec) error {
	c, err := p.run(ctx, spec, nil, "--version")
	if err != nil {
		return err
	}
	out := strings.TrimSpace(string(c.stdout))
	if c.code != 0 {
		return fmt.Errorf("%w: `crabbox --version` exited %d: %s", sandbox.ErrUnavailable, c.code, c.message())
	}
	v, ok := parseVersion(out)
	if !ok {
		return fmt.Errorf("%w: crabbox reports version %q, which git-lease cannot compare; install a Crabbox release %d.%d.%d or later", sandbox.ErrUnavailable, out, minVersion[0], minVersion[1], minVersion[2])
	}
	if v.Less(minVersion) {
		return fmt.Errorf("%w: crabbox %s is too old; git-lease needs %d.%d.%d or later (upgrade Crabbox)", sandbox.ErrUnavailable, out, minVersion[0], minVersion[1], minVersion[2])
	}
	return nil
}

// parseVersion reads what `crabbox --version` prints: a version, with
// "crabbox " before it or not.
func parseVersion(s string) (sandbox.Version, bool) {
	return sandbox.ParseVersion(strings.TrimPrefix(strings.TrimSpace(s), "crabbox "))
}

// doctorReport is the shape of `crabbox doctor --json`.
type doctorReport struct {
	OK     bool `json:"ok"`
	Checks []struct {
		Status  string            `json:"status"`
		Check   string            `json:"check"`
		Message string            `json:"message"`
		Details map[string]string `json:"details"`
	} `json:"checks"`
}

// doctor asks `crabbox doctor --provider P --json`, which checks local
// tools, the config file, credentials and provider readiness without
// creating anything, and fails closed with ErrUnavailable naming the failed
// checks. A failed check of class auth means crabbox is not logged in.
func (p Provider) doctor(ctx context.Context, spec sandbox.Spec) error {
	c, err := p.run(ctx, spec, nil, "doctor", "--provider", p.CrabboxProvider, "--json")
	switch {
	case err != nil:
		return err
	case c.code == 0:
		return nil
	case c.code == 3:
		return c.err()
	}
	var r doctorReport
	if json.Unmarshal(c.stdout, &r) != nil {
		return fmt.Errorf("%w: `crabbox doctor --provider %s` exited %d: %s", sandbox.ErrUnavailable, p.CrabboxProvider, c.code, c.message())
	}
	var failed []string
	auth := false
	for _, check := range r.Checks {
		if check.Status == "ok" || check.Status == "skip" || check.Status == "warning" {
			continue
		}
		auth = auth || check.Details["class"] == "auth"
		failed = append(failed, fmt.Sprintf("%s %s: %s (hint %s)", check.Status, check.Check, check.Message, check.Details["hint"]))
	}
	if auth {
		return call{args: c.args, code: 3, stderr: strings.Join(failed, "; ")}.err()
	}
	return fmt.Errorf("%w: `crabbox doctor --provider %s` says the provider is not ready: %s", sandbox.ErrUnavailable, p.CrabboxProvider, strings.Join(failed, "; "))
}
