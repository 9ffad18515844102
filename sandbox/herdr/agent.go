package herdr

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Status is an agent's state as Herdr shows it.
type Status string

// Agent states. Herdr accepts every state but StatusDone in a report: a
// pane reported idle after working or blocked shows as done until someone
// looks at it (focusing it turns done into idle).
const (
	StatusIdle    Status = "idle"
	StatusWorking Status = "working"
	StatusBlocked Status = "blocked"
	StatusDone    Status = "done"
	StatusUnknown Status = "unknown"
)

// Finished reports whether the agent has finished its turn (idle or done).
func (s Status) Finished() bool {
	return s == StatusIdle || s == StatusDone
}

// Source is the reporter git-lease names in every state report.
const Source = "custom:git-lease"

// AgentInfo is Herdr's view of the agent in a pane (the fields git-lease
// reads).
type AgentInfo struct {
	PaneID         string `json:"pane_id"`
	TerminalID     string `json:"terminal_id"`
	WorkspaceID    string `json:"workspace_id"`
	TabID          string `json:"tab_id"`
	Agent          string `json:"agent"`
	AgentStatus    Status `json:"agent_status"`
	StateChangeSeq uint64 `json:"state_change_seq"`
}

// reportSeq is the last seq sent with a report.
var reportSeq atomic.Int64

// nextReportSeq is the seq of the next report: Herdr ignores a report from
// a source whose seq is not above the last it saw from that source on the
// pane, so a late report never overwrites a newer one. Clock-based, so a
// runner that starts again (or a second git-lease process) still counts up.
func nextReportSeq() uint64 {
	for {
		last := reportSeq.Load()
		next := max(time.Now().UnixNano(), last+1)
		if reportSeq.CompareAndSwap(last, next) {
			return uint64(next)
		}
	}
}

// ReportAgent tells Herdr the state of the agent in a pane, as Source.
// agent names it (such as the agent command); state is idle, working,
// blocked or unknown (report idle when the agent is done). The latest
// report wins (each carries a rising seq), so repeating one is harmless, but a report whose answer was
// lost is not sent again by the client: report again if it matters. A
// missing pane matches ErrPaneNotFound.
func (c *Client) ReportAgent(ctx context.Context, paneID, agent string, state Status, message string) error {
	switch state {
	case StatusIdle, StatusWorking, StatusBlocked, StatusUnknown:
	case StatusDone:
		return errors.New("herdr pane.report_agent: herdr does not accept done: report idle, which herdr shows as done")
	default:
		return fmt.Errorf("herdr pane.report_agent: %q is not a state: report idle, working, blocked or unknown", state)
	}
	if agent == "" {
		return errors.New("herdr pane.report_agent: the agent name is empty")
	}
	params := map[string]any{"pane_id": paneID, "source": Source, "agent": agent, "state": string(state), "seq": nextReportSeq()}
	if message != "" {
		params["message"] = message
	}
	return c.call(ctx, "pane.report_agent", params, nil)
}

// ReleaseAgent ends git-lease's reports for the agent in a pane, handing
// its state back to Herdr's own detection. Releasing twice is harmless. A
// missing pane matches ErrPaneNotFound.
func (c *Client) ReleaseAgent(ctx context.Context, paneID, agent string) error {
	params := map[string]string{"pane_id": paneID, "source": Source, "agent": agent}
	return c.call(ctx, "pane.release_agent", params, nil)
}

// Wait blocks until the agent in p shows one of until (idle, done or
// blocked when until is empty) and returns Herdr's view of it. Herdr pins
// the wait to p's terminal: it fails with ErrAgentNotRunning when the pane
// closes, its process exits or its terminal is not p's; with
// ErrAgentNotFound when nothing reported an agent in the pane; and with
// ErrWaitTimeout after timeout, which must be positive. The call's deadline
// is timeout plus the client's Timeout. Wait changes nothing and is
// retried once if the connection drops.
func (c *Client) Wait(ctx context.Context, p Pane, timeout time.Duration, until ...Status) (AgentInfo, error) {
	if timeout <= 0 {
		return AgentInfo{}, errors.New("herdr agent.wait: give a positive timeout; git-lease never waits forever")
	}
	params := map[string]any{"target": p.PaneID, "timeout_ms": max(timeout.Milliseconds(), 1)}
	if len(until) > 0 {
		params["until"] = until
	}
	var r struct {
		Agent AgentInfo `json:"agent"`
	}
	if err := c.callWithin(ctx, timeout+c.timeout(), "agent.wait", params, &r); err != nil {
		return AgentInfo{}, err
	}
	if r.Agent.TerminalID != p.TerminalID {
		return AgentInfo{}, &Error{Method: "agent.wait", Code: ErrAgentNotRunning.Code,
			Message: fmt.Sprintf("pane %s now shows terminal %s, not %s", p.PaneID, r.Agent.TerminalID, p.TerminalID)}
	}
	return r.Agent, nil
}
