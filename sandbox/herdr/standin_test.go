package herdr

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/git-lease/git-lease/refs/refstest"
)

// The stand-in for Herdr (testdata/herdr-standin) is built once per test
// binary, into binDir.
var (
	binDir      string
	buildOnce   sync.Once
	standinPath string
	buildErr    error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "herdr-standin")
	if err != nil {
		panic(err)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func standinBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		standinPath, buildErr = refstest.Build(binDir, "herdr-standin", "./testdata/herdr-standin")
	})
	if buildErr != nil {
		t.Fatalf("the herdr stand-in: %v", buildErr)
	}
	return standinPath
}

// standin is a running stand-in server and a client for it.
type standin struct {
	*Client
	log string
}

// startStandin runs the stand-in on a socket in a temporary directory. At
// the end of the test it stops it and checks that no focus method was ever
// requested.
func startStandin(t *testing.T, args ...string) *standin {
	t.Helper()
	dir := t.TempDir()
	s := &standin{
		Client: &Client{Socket: filepath.Join(dir, "herdr.sock"), Timeout: 2 * time.Second},
		log:    filepath.Join(dir, "requests.log"),
	}
	var stderr bytes.Buffer
	cmd := exec.Command(standinBinary(t), append([]string{"-socket", s.Socket, "-log", s.log}, args...)...)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if stderr.Len() > 0 {
			t.Logf("stand-in stderr: %s", stderr.String())
		}
		for _, m := range s.methods(t) {
			if strings.Contains(m, "focus") {
				t.Errorf("a focus method was requested: %s", m)
			}
		}
	})
	eventually(t, "the stand-in listens", func() bool {
		conn, err := net.Dial("unix", s.Socket)
		if err == nil {
			conn.Close()
		}
		return err == nil
	})
	return s
}

// methods returns every method requested so far, in order.
func (s *standin) methods(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(s.log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Fields(string(data))
}

// count counts the requests for method after the last standin.set.
func (s *standin) count(t *testing.T, method string) int {
	t.Helper()
	all := s.methods(t)
	n := 0
	for i := len(all) - 1; i >= 0 && all[i] != "standin.set"; i-- {
		if all[i] == method {
			n++
		}
	}
	return n
}

// raw sends one request as is and returns the decoded answer.
func (s *standin) raw(t *testing.T, method string, params any) map[string]any {
	t.Helper()
	conn, err := net.Dial("unix", s.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	line, _ := json.Marshal(map[string]any{"id": "test", "method": method, "params": params})
	if _, err := conn.Write(append(line, '\n')); err != nil {
		t.Fatal(err)
	}
	answer, err := bufio.NewReader(conn).ReadBytes('\n')
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	var reply map[string]any
	if err := json.Unmarshal(answer, &reply); err != nil {
		t.Fatal(err)
	}
	return reply
}

// set changes the stand-in's knobs (see testdata/herdr-standin).
func (s *standin) set(t *testing.T, drop int, delay time.Duration) {
	t.Helper()
	reply := s.raw(t, "standin.set", map[string]any{"drop": drop, "delay_ms": delay.Milliseconds()})
	if reply["error"] != nil {
		t.Fatalf("standin.set: %v", reply["error"])
	}
}

// eventually polls ok until it holds. The deadline is generous because the
// stand-in's shells are slow to answer on a loaded machine; a passing test
// returns as soon as ok holds.
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

// readUntil reads a pane until its output contains want.
func readUntil(t *testing.T, c *Client, paneID, want string) string {
	t.Helper()
	var text string
	eventually(t, "pane "+paneID+" shows "+want, func() bool {
		var err error
		text, err = c.Read(context.Background(), paneID, 100)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(text, want)
	})
	return text
}

// runPane opens a workspace whose only pane runs argv, labelled label.
func runPane(t *testing.T, c *Client, label string, argv ...string) Pane {
	t.Helper()
	ws, err := c.CreateWorkspace(t.Context(), WorkspaceSpec{Label: label})
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Run(t.Context(), RunSpec{ReplaceTabID: ws.TabID, Label: label, Argv: argv})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
