package gitlease

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/git-lease/git-lease/sandbox"
	"github.com/git-lease/git-lease/sandbox/process"
)

// sandboxProcsFile, in the run directory, names the host processes that
// hold the lease's sandbox (sandbox.Holders) with their start times: a
// local detail, like runner.json, that stays out of the lease log.
const sandboxProcsFile = "sandbox.json"

// recordSandbox writes sandbox.json for a launched sandbox whose provider
// names its holders; other providers record nothing.
func (x *Execution) recordSandbox(proc sandbox.Process) error {
	h, ok := proc.(sandbox.Holders)
	if !ok {
		return nil
	}
	procs := []process.Record{}
	for _, pid := range h.Holders() {
		if pid <= 0 {
			continue
		}
		r, err := process.Of(pid)
		if err != nil {
			return fmt.Errorf("sandbox process %d: %w", pid, err)
		}
		procs = append(procs, r)
	}
	b, _ := json.Marshal(procs)
	return os.WriteFile(filepath.Join(x.RunDir(), sandboxProcsFile), b, 0o600)
}

// stopSandbox confirms that every process of the lease's sandbox is gone,
// by the holders recorded at launch: one still alive is killed (the kernel
// ends the rest of its PID namespace with it) and waited for. ok is false
// when none was alive (nothing to add to a receipt).
func (x *Execution) stopSandbox() (item CleanupItem, ok bool) {
	item = CleanupItem{Resource: "sandbox-processes"}
	b, err := os.ReadFile(filepath.Join(x.RunDir(), sandboxProcsFile))
	if os.IsNotExist(err) {
		return item, false
	}
	var procs []process.Record
	if err == nil {
		err = json.Unmarshal(b, &procs)
	}
	if err != nil {
		item.Action, item.Detail = ActionFailed, "cannot tell which processes hold the sandbox: "+err.Error()
		return item, true
	}
	var stopped, failed []string
	for _, p := range procs {
		alive, err := process.Stop(p.PID, p.StartTime, 5*time.Second)
		switch {
		case err != nil:
			failed = append(failed, fmt.Sprintf("pid %d: %v", p.PID, err))
		case alive:
			stopped = append(stopped, fmt.Sprintf("pid %d", p.PID))
		}
	}
	switch {
	case len(failed) > 0:
		item.Action, item.Detail = ActionFailed, strings.Join(failed, "; ")
	case len(stopped) > 0:
		item.Action, item.Detail = ActionStopped, strings.Join(stopped, ", ")
	default:
		return item, false
	}
	return item, true
}
