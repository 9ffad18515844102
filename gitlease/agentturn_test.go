package gitlease

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/git-lease/git-lease/refs/refstest"
	"github.com/git-lease/git-lease/sandbox/netproxy"
)

// The turn that turnModel scripts, on the files of TestSandboxRealAgentCompletesATurn's base:
// a.txt's "hello" becomes "bye", new.txt is added, gone.txt deleted, each
// with the agent's own tools.
const (
	turnPrompt = "say bye in a.txt, add new.txt, delete gone.txt"
	turnAnswer = "Done: a.txt says bye, new.txt added, gone.txt deleted."
)

// TestSandboxRealAgentCompletesATurn runs Claude Code and Codex, as
// scripts/test.sh installs them from npm, through their built-in presets in
// a sandboxed lease, against turnModel on the host's loopback, reached as
// host.lease.internal by a preset's base_url with one line of trusted
// policy: the model's tool calls edit, add and delete a file, then it
// answers. The result is exactly those changes, with no finding; what a
// reviewer sees matches it, it verifies, and apply lands it on the branch.
func TestSandboxRealAgentCompletesATurn(t *testing.T) {
	// The API key each preset's agent receives.
	for name, key := range map[string]string{"claude": "ANTHROPIC_API_KEY", "codex": "CODEX_API_KEY", "opencode": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY"} {
		t.Run(name, func(t *testing.T) {
			realAgent(t, name)
			model := newTurnModel(t)
			u, err := url.Parse(model.URL)
			if err != nil {
				t.Fatal(err)
			}
			policy := fmt.Sprintf("[agents.%s]\nbase_url = \"http://%s:%s\"\nnetwork = [\"127.0.0.1:%s\"]\n", name, netproxy.HostAlias, u.Port(), u.Port())
			repo, dir := sandboxRepo(t, map[string]string{"a.txt": "hello\n", "gone.txt": "gone\n", "keep.txt": "keep\n"}, policy)
			fakeDNS(t, nil) // nothing but the model is reachable
			t.Setenv(key, "fake-key-"+name)
			x, out := runLease(t, repo, StartOptions{Agent: name, Prompt: turnPrompt}, "")
			if x.Lease.State != Review || len(x.Lease.Findings) > 0 || !strings.Contains(out, turnAnswer) {
				t.Fatalf("lease %s (%s), findings %+v, model saw %s\nagent's output:\n%s", x.Lease.State, x.Lease.Reason, x.Lease.Findings, model.log(), out)
			}
			var changes []string
			for _, f := range x.Lease.Result.Manifest {
				changes = append(changes, f.Status+" "+f.Path)
			}
			if want := []string{"M a.txt", "D gone.txt", "A new.txt"}; !slices.Equal(changes, want) {
				t.Fatalf("result %q, want %q; model saw %s", changes, want, model.log())
			}
			if rep, err := CheckReview(t.Context(), x); err != nil || !rep.Match {
				t.Fatalf("review: %v %+v", err, rep)
			}
			allowed, err := AllowedSigners(repo, "", true)
			if err != nil {
				t.Fatal(err)
			}
			if v := Verify(t.Context(), x, allowed); !v.OK {
				t.Fatalf("the result does not verify: %v", v.Problems)
			}
			must(t, Apply(t.Context(), x, ApplyOptions{}))
			if got := refstest.Git(t, dir, "show", "main:a.txt") + "|" + refstest.Git(t, dir, "show", "main:new.txt") + "|" + refstest.Git(t, dir, "ls-tree", "--name-only", "main"); got != "bye|added|a.txt\nkeep.txt\nnew.txt" {
				t.Fatalf("main after apply: %q", got)
			}
		})
	}
}

// turnModel is a model server that plays one scripted turn (turnPrompt)
// for Claude Code (Anthropic's Messages API) and for Codex (OpenAI's
// Responses API), streamed as server-sent events as each CLI asks: tool
// calls that make the changes, then turnAnswer once the agent has sent
// back their results. It keeps the tool results of the latest request,
// for a failing test to show.
type turnModel struct {
	*httptest.Server
	mu      sync.Mutex
	results []string
}

func newTurnModel(t *testing.T) *turnModel {
	m := &turnModel{}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "" {
			// No WebSocket here: Codex then posts over HTTP, at once
			// on a 426 (after six seconds of retries on a 404).
			http.Error(w, "no websocket", http.StatusUpgradeRequired)
			return
		}
		b, _ := io.ReadAll(r.Body)
		var events [][2]any
		var err error
		switch r.URL.Path {
		case "/v1/messages":
			events, err = m.messages(b)
		case "/v1/responses":
			events, err = m.responses(b)
		default:
			if strings.HasPrefix(r.URL.Path, "/v1beta/models/") {
				// Gemini's API: the stream is data lines alone.
				reply, err := m.gemini(b)
				if err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				data, _ := json.Marshal(reply)
				if strings.HasSuffix(r.URL.Path, ":streamGenerateContent") {
					w.Header().Set("Content-Type", "text/event-stream")
					fmt.Fprintf(w, "data: %s\n\n", data)
				} else {
					w.Header().Set("Content-Type", "application/json")
					w.Write(data)
				}
				return
			}
			err = fmt.Errorf("no API at %s", r.URL.Path)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			data, _ := json.Marshal(e[1])
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e[0], data)
		}
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *turnModel) log() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return fmt.Sprintf("these tool results: %q", m.results)
}

func (m *turnModel) keep(results []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.results = results
}

// messages answers a Messages API request: Claude Code's turn asks with
// its tools; its other requests (a title, a summary) get a line of text.
// The turn's step is the number of tool results the agent has sent back:
// first Read a.txt (Edit refuses a file not read), Write new.txt and a
// Bash rm of gone.txt; then Edit a.txt; then the answer.
func (m *turnModel) messages(body []byte) ([][2]any, error) {
	var req struct {
		Tools    []json.RawMessage
		Messages []struct {
			Content json.RawMessage
		}
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	type block = map[string]any
	var sent []string
	for _, msg := range req.Messages {
		var blocks []block
		json.Unmarshal(msg.Content, &blocks) // a string content has no tool results
		for _, b := range blocks {
			if b["type"] == "tool_result" {
				s, _ := json.Marshal(b)
				sent = append(sent, string(s))
			}
		}
	}
	results := len(sent)
	if len(req.Tools) > 0 {
		m.keep(sent)
	}
	tool := func(id, name string, input any) block {
		return block{"type": "tool_use", "id": id, "name": name, "input": input}
	}
	// Claude Code's tools and opencode's (lowercase names, camel-case
	// arguments), which the same Messages API carries.
	read, write, bash, edit := "Read", "Write", "Bash", "Edit"
	path, oldText, newText := "file_path", "old_string", "new_string"
	if slices.ContainsFunc(req.Tools, func(t json.RawMessage) bool { return bytes.Contains(t, []byte(`"name":"write"`)) }) {
		read, write, bash, edit = "read", "write", "bash", "edit"
		path, oldText, newText = "filePath", "oldString", "newString"
	}
	var content []block
	switch {
	case len(req.Tools) == 0:
		content = []block{{"type": "text", "text": "A turn"}}
	case results == 0:
		content = []block{
			tool("toolu_read", read, block{path: "/work/a.txt"}),
			tool("toolu_write", write, block{path: "/work/new.txt", "content": "added\n"}),
			tool("toolu_bash", bash, block{"command": "rm /work/gone.txt", "description": "Delete gone.txt"}),
		}
	case results == 3:
		content = []block{tool("toolu_edit", edit, block{path: "/work/a.txt", oldText: "hello", newText: "bye"})}
	default:
		content = []block{{"type": "text", "text": turnAnswer}}
	}
	stop := "end_turn"
	if content[0]["type"] == "tool_use" {
		stop = "tool_use"
	}
	// Each response its own message id: Claude Code merges the content
	// of responses that share one.
	id := fmt.Sprintf("msg_%d", results)
	events := [][2]any{{"message_start", block{"type": "message_start", "message": block{
		"id": id, "type": "message", "role": "assistant", "model": "fake", "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": block{"input_tokens": 1, "output_tokens": 1}}}}}
	for i, c := range content {
		// A block starts empty and its content streams as deltas.
		start, delta := block{"type": "text", "text": ""}, block{"type": "text_delta", "text": c["text"]}
		if c["type"] == "tool_use" {
			input, _ := json.Marshal(c["input"])
			start = block{"type": "tool_use", "id": c["id"], "name": c["name"], "input": block{}}
			delta = block{"type": "input_json_delta", "partial_json": string(input)}
		}
		events = append(events,
			[2]any{"content_block_start", block{"type": "content_block_start", "index": i, "content_block": start}},
			[2]any{"content_block_delta", block{"type": "content_block_delta", "index": i, "delta": delta}},
			[2]any{"content_block_stop", block{"type": "content_block_stop", "index": i}})
	}
	return append(events,
		[2]any{"message_delta", block{"type": "message_delta", "delta": block{"stop_reason": stop, "stop_sequence": nil}, "usage": block{"output_tokens": 1}}},
		[2]any{"message_stop", block{"type": "message_stop"}}), nil
}

// turnPatch is the turn's change as Codex's apply_patch tool takes it.
const turnPatch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-hello\n+bye\n*** Add File: new.txt\n+added\n*** Delete File: gone.txt\n*** End Patch\n"

// responses answers a Responses API request from Codex. Codex 0.171's
// default model works in "code mode": its one tool, exec, runs the
// JavaScript the model writes, which calls Codex's tools (apply_patch
// here). The turn's step is the number of tool outputs the agent has sent
// back: first the patch, then the answer.
func (m *turnModel) responses(body []byte) ([][2]any, error) {
	var req struct {
		Input []map[string]any
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	var sent []string
	for _, item := range req.Input {
		if item["type"] == "custom_tool_call_output" || item["type"] == "function_call_output" {
			s, _ := json.Marshal(item)
			sent = append(sent, string(s))
		}
	}
	m.keep(sent)
	outputs := len(sent)
	type obj = map[string]any
	item := obj{"type": "message", "id": "msg_answer", "role": "assistant", "status": "completed",
		"content": []obj{{"type": "output_text", "text": turnAnswer, "annotations": []any{}}}}
	if outputs == 0 {
		script, _ := json.Marshal(turnPatch)
		item = obj{"type": "custom_tool_call", "id": "ctc_patch", "call_id": "call_patch", "name": "exec", "status": "completed",
			"input": fmt.Sprintf("await tools.apply_patch(%s);\ntext('patched');\n", script)}
	}
	id := fmt.Sprintf("resp_%d", outputs)
	return [][2]any{
		{"response.created", obj{"type": "response.created", "response": obj{"id": id}}},
		{"response.output_item.added", obj{"type": "response.output_item.added", "output_index": 0, "item": item}},
		{"response.output_item.done", obj{"type": "response.output_item.done", "output_index": 0, "item": item}},
		{"response.completed", obj{"type": "response.completed", "response": obj{"id": id, "output": []obj{item},
			"usage": obj{"input_tokens": 1, "input_tokens_details": obj{"cached_tokens": 0}, "output_tokens": 1,
				"output_tokens_details": obj{"reasoning_tokens": 0}, "total_tokens": 2}}}},
	}, nil
}

// gemini answers a Gemini API request from Gemini CLI: the turn's step is
// the number of function responses the agent has sent back: first
// read_file, write_file and run_shell_command, then replace, then the
// answer. A request for JSON gets an object of its schema; one without
// tools, a line of text.
func (m *turnModel) gemini(body []byte) (map[string]any, error) {
	var req struct {
		Tools    []json.RawMessage
		Contents []struct {
			Parts []map[string]json.RawMessage
		}
		GenerationConfig struct {
			ResponseJSONSchema struct {
				Properties map[string]struct{ Type string }
			}
		}
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	type obj = map[string]any
	var sent []string
	for _, c := range req.Contents {
		for _, part := range c.Parts {
			if r, ok := part["functionResponse"]; ok {
				sent = append(sent, string(r))
			}
		}
	}
	if len(req.Tools) > 0 {
		m.keep(sent)
	}
	call := func(name string, args obj) obj { return obj{"functionCall": obj{"name": name, "args": args}} }
	var parts []obj
	switch {
	case len(req.GenerationConfig.ResponseJSONSchema.Properties) > 0:
		// A request for JSON (Gemini CLI first asks a small model how
		// complex the task is, and retries with a backoff, a minute and
		// more, until the answer fits the schema): strings and numbers.
		answer := obj{}
		for name, p := range req.GenerationConfig.ResponseJSONSchema.Properties {
			answer[name] = "A turn."
			if p.Type == "INTEGER" || p.Type == "NUMBER" {
				answer[name] = 10
			}
		}
		text, _ := json.Marshal(answer)
		parts = []obj{{"text": string(text)}}
	case len(req.Tools) == 0:
		parts = []obj{{"text": "A turn"}}
	case len(sent) == 0:
		parts = []obj{
			call("read_file", obj{"file_path": "/work/a.txt"}),
			call("write_file", obj{"file_path": "/work/new.txt", "content": "added\n"}),
			call("run_shell_command", obj{"command": "rm /work/gone.txt", "description": "Delete gone.txt"}),
		}
	case len(sent) == 3:
		parts = []obj{call("replace", obj{"file_path": "/work/a.txt", "old_string": "hello", "new_string": "bye", "instruction": "Say bye."})}
	default:
		parts = []obj{{"text": turnAnswer}}
	}
	return obj{
		"candidates":    []obj{{"content": obj{"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": obj{"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
		"modelVersion":  "fake",
	}, nil
}
