package gitlease

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/sandbox/netproxy"
	"github.com/git-lease/git-lease/verify"
)

// standInAPI is an HTTP server on the host's loopback standing in for an
// agent's API; it counts the requests it answers.
type standInAPI struct {
	*httptest.Server
	requests atomic.Int32
}

func newStandInAPI(t *testing.T, tls bool) *standInAPI {
	api := &standInAPI{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		api.requests.Add(1)
		fmt.Fprintf(w, "api-ok %s\n", r.URL.Path)
	})
	if tls {
		api.Server = httptest.NewTLSServer(h)
	} else {
		api.Server = httptest.NewServer(h)
	}
	t.Cleanup(api.Close)
	return api
}

func (a *standInAPI) port() int { return a.Listener.Addr().(*net.TCPAddr).Port }

// countingListener is a TCP listener on the host's loopback that must
// never be reached: it counts the connections it accepts.
func countingListener(t *testing.T) (port int, accepted *atomic.Int32) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	accepted = &atomic.Int32{}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port, accepted
}

// fakeDNS makes lease proxies resolve names from hosts and nothing else, so
// that no test sends a DNS query.
func fakeDNS(t *testing.T, hosts map[string]string) {
	netResolve = func(_ context.Context, host string) ([]netip.Addr, error) {
		if a, ok := hosts[host]; ok {
			return []netip.Addr{netip.MustParseAddr(a)}, nil
		}
		return nil, fmt.Errorf("lookup %s: no such host", host)
	}
	t.Cleanup(func() { netResolve = nil })
}

func needCurl(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("these attacks use curl, as agents' HTTP clients do: install curl")
	}
}

// findingAt returns the lease's finding of rule at path.
func findingAt(x *Execution, rule, path string) *verify.Finding {
	for i, f := range x.Lease.Findings {
		if f.Rule == rule && f.Path == path {
			return &x.Lease.Findings[i]
		}
	}
	return nil
}

func TestSandboxNetworkReachesOnlyItsAllowlist(t *testing.T) {
	needCurl(t)
	api := newStandInAPI(t, false)
	tlsAPI := newStandInAPI(t, true)
	other, otherAccepted := countingListener(t)
	fakeDNS(t, map[string]string{
		"api.lease.test":           "127.0.0.1",
		"internal.apis.lease.test": "127.0.0.1",
		"evil.lease.test":          "203.0.113.7",
	})
	p, tp := api.port(), tlsAPI.port()
	trustedTOML := fmt.Sprintf("[network]\nallow = [\"api.lease.test:%d\", \"api.lease.test:%d\", \"*.apis.lease.test:%d\"]\n", p, tp, p)
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, trustedTOML)
	curl := "curl -fsS --max-time 10 "
	viaProxy := curl + `--proxy "$HTTP_PROXY" --noproxy '' `
	script := "echo proxy-variables=$(env | grep -c -i '^[a-z]*_proxy=')\n" +
		fmt.Sprintf(curl+"http://api.lease.test:%d/plain\n", p) +
		fmt.Sprintf(curl+"-k https://api.lease.test:%d/tls\n", tp) +
		attempt("not-allowlisted", fmt.Sprintf(curl+"http://evil.lease.test:%d/", p)) +
		attempt("ip-literal", fmt.Sprintf(viaProxy+"http://127.0.0.1:%d/", p)) +
		attempt("private-name", fmt.Sprintf(curl+"http://internal.apis.lease.test:%d/", p)) +
		attempt("unresolved", fmt.Sprintf(curl+"http://missing.apis.lease.test:%d/", p)) +
		attempt("direct-tcp", fmt.Sprintf("exec 3<>/dev/tcp/192.0.2.1/%d", p)) +
		attempt("direct-loopback", fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d", other)) +
		attempt("other-port", fmt.Sprintf(viaProxy+"http://localhost:%d/", other)) +
		attempt("other-port-by-name", fmt.Sprintf(curl+"-k https://api.lease.test:%d/", other))
	x, out := runLease(t, repo, StartOptions{}, script)
	if !strings.Contains(out, "proxy-variables=8\n") {
		t.Fatalf("the agent should have HTTPS_PROXY, HTTP_PROXY, ALL_PROXY and NO_PROXY in both cases:\n%s", out)
	}
	if !strings.Contains(out, "api-ok /plain") || !strings.Contains(out, "api-ok /tls") {
		t.Fatalf("the allowlisted destinations were not reached:\n%s", out)
	}
	requireBlocked(t, out, "not-allowlisted", "ip-literal", "private-name", "unresolved", "direct-tcp", "direct-loopback", "other-port", "other-port-by-name")
	if n := api.requests.Load() + tlsAPI.requests.Load(); n != 2 {
		t.Fatalf("the stand-in APIs answered %d requests, want the 2 allowed ones", n)
	}
	if n := otherAccepted.Load(); n != 0 {
		t.Fatalf("the host's other port accepted %d connections", n)
	}
	for _, want := range []struct{ path, reason, severity string }{
		{fmt.Sprintf("evil.lease.test:%d", p), netproxy.ReasonNotAllowlisted, verify.SeverityMedium},
		{fmt.Sprintf("127.0.0.1:%d", p), netproxy.ReasonIPLiteral, verify.SeverityHigh},
		{fmt.Sprintf("internal.apis.lease.test:%d", p), netproxy.ReasonPrivateAddress, verify.SeverityCritical},
		{fmt.Sprintf("localhost:%d", other), netproxy.ReasonNotAllowlisted, verify.SeverityMedium},
		{fmt.Sprintf("api.lease.test:%d", other), netproxy.ReasonNotAllowlisted, verify.SeverityMedium},
	} {
		f := findingAt(x, RuleNetworkRefused, want.path)
		if f == nil || !strings.HasPrefix(f.Detail, want.reason) || f.Severity != want.severity {
			t.Errorf("finding for %s: %+v, want %s (%s)", want.path, f, want.reason, want.severity)
		}
	}
	if f := findingAt(x, RuleNetworkBypass, "no-route"); f == nil {
		t.Errorf("the direct connection is not a finding: %+v", x.Lease.Findings)
	}
	n := x.Lease.Network
	if n == nil || n.Allowed != 2 || n.Failed != 1 || n.Refused != 5 || n.BytesDown == 0 || n.Bypass.NoRoute < 1 || n.Events != networkFile {
		t.Fatalf("network record %+v", n)
	}
	var events netproxy.Summary
	b, err := x.Repo.ReadFile(x.Tip, networkFile, 1<<20)
	if err != nil || json.Unmarshal(b, &events) != nil || len(events.Events) != 8 {
		t.Fatalf("network.json (%v): %s", err, b)
	}
	listed, err := Findings(x.Repo, x.Lease.ID)
	if err != nil || len(listed) != len(x.Lease.Findings) || len(listed) < 6 {
		t.Fatalf("git lease findings lists %d of %d findings (%v)", len(listed), len(x.Lease.Findings), err)
	}
	if x.Lease.State != Review {
		t.Fatalf("state %s: %s", x.Lease.State, x.Lease.Reason)
	}
}

func TestSandboxNetworkDNSQueryIsAFinding(t *testing.T) {
	for _, trustedTOML := range []string{"", "[network]\nallow = [\"api.lease.test:443\"]\n"} {
		repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, trustedTOML)
		// The resolver's query goes wherever the host's resolv.conf says;
		// the raw one to an outside resolver surely has no route.
		script := attempt("dns", "getent hosts example.com") + attempt("dns-raw", "printf 'q' > /dev/udp/192.0.2.53/53")
		x, out := runLease(t, repo, StartOptions{}, script)
		requireBlocked(t, out, "dns", "dns-raw")
		b := x.Lease.Network
		if b == nil || b.Bypass.NoRoute+b.Bypass.ClosedUDP == 0 || len(x.Lease.Findings) == 0 || x.Lease.Findings[0].Rule != RuleNetworkBypass {
			t.Fatalf("policy %q: the DNS query left no evidence: %+v %+v", trustedTOML, b, x.Lease.Findings)
		}
	}
}

// runLease starts a sandboxed lease with opts; without an agent preset the
// agent is bash running script.
func runLease(t *testing.T, repo *refs.Repo, opts StartOptions, script string) (*Execution, string) {
	t.Helper()
	var out bytes.Buffer
	opts.Mode, opts.Output = Sandboxed, &out
	if opts.Agent == "" {
		opts.Command = []string{"bash", "-c", script}
	}
	x, err := Start(context.Background(), repo, opts)
	if x == nil {
		t.Fatalf("start: %v", err)
	}
	if err != nil {
		t.Fatalf("lease %s: %v\n%s", x.Lease.ID, err, out.String())
	}
	return x, out.String()
}

// TestSandboxNetworkReachesAHostServiceAsHostLeaseInternal has a service on the
// host's loopback, allowed in trusted policy as 127.0.0.1:PORT, that the
// agent reaches as host.lease.internal:PORT with its proxy environment as
// given (NO_PROXY included), and nothing else of the host's loopback.
func TestSandboxNetworkReachesAHostServiceAsHostLeaseInternal(t *testing.T) {
	needCurl(t)
	api := newStandInAPI(t, false)
	other, otherAccepted := countingListener(t)
	fakeDNS(t, nil)
	p := api.port()
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, fmt.Sprintf("[network]\nallow = [\"127.0.0.1:%d\"]\n", p))
	curl := "curl -fsS --max-time 10 "
	script := fmt.Sprintf(curl+"http://%s:%d/model\n", netproxy.HostAlias, p) +
		attempt("other-port", fmt.Sprintf(curl+"http://%s:%d/", netproxy.HostAlias, other)) +
		attempt("own-loopback", fmt.Sprintf(curl+"http://127.0.0.1:%d/", p))
	x, out := runLease(t, repo, StartOptions{}, script)
	if !strings.Contains(out, "api-ok /model") || api.requests.Load() != 1 {
		t.Fatalf("the host's service was not reached by its alias (%d requests):\n%s", api.requests.Load(), out)
	}
	requireBlocked(t, out, "other-port", "own-loopback")
	if n := otherAccepted.Load(); n != 0 {
		t.Fatalf("the host's other port accepted %d connections", n)
	}
	if f := findingAt(x, RuleNetworkRefused, fmt.Sprintf("%s:%d", netproxy.HostAlias, other)); f == nil || !strings.HasPrefix(f.Detail, netproxy.ReasonNotAllowlisted) {
		t.Errorf("the other port's refusal: %+v", x.Lease.Findings)
	}
	var events netproxy.Summary
	b, err := x.Repo.ReadFile(x.Tip, networkFile, 1<<20)
	if err != nil || json.Unmarshal(b, &events) != nil || len(events.Events) != 2 {
		t.Fatalf("network.json (%v): %s", err, b)
	}
	if ev := events.Events[0]; ev.Dest != fmt.Sprintf("%s:%d", netproxy.HostAlias, p) || ev.Addr != fmt.Sprintf("127.0.0.1:%d", p) || !ev.Allowed {
		t.Fatalf("the event names %+v", ev)
	}
}

// TestSandboxNetworkShowsNoHostPath: the proxy's socket is one the sandbox
// made itself, so that a lease with a network shows no host path: not the
// temporary directory's (where a host socket would live) nor the
// repository's, in the mount table, in any descriptor's link or in any
// environment. The network still works through it.
func TestSandboxNetworkShowsNoHostPath(t *testing.T) {
	needCurl(t)
	api := newStandInAPI(t, false)
	fakeDNS(t, map[string]string{"api.lease.test": "127.0.0.1"})
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	repo, dir := sandboxRepo(t, map[string]string{"a": "a"}, fmt.Sprintf("[network]\nallow = [\"api.lease.test:%d\"]\n", api.port()))
	look := "{ cat /proc/self/mountinfo /proc/[0-9]*/environ; ls -l /proc/[0-9]*/fd/ /proc/[0-9]*/cwd /proc/[0-9]*/root; } 2>/dev/null"
	script := fmt.Sprintf("curl -fsS --max-time 10 http://api.lease.test:%d/through-the-sandboxs-socket\n", api.port()) +
		"test -S /run/lease/proxy.sock && echo proxy-socket-there\n" +
		attempt("tmpdir", splitGrep(look, tmp)) +
		attempt("repository", splitGrep(look, dir)) +
		attempt("git-dir", splitGrep(look, repo.CommonDir))
	x, out := runLease(t, repo, StartOptions{}, script)
	if !strings.Contains(out, "api-ok /through-the-sandboxs-socket") || !strings.Contains(out, "proxy-socket-there") {
		t.Fatalf("the allowlisted destination was not reached through the proxy's socket:\n%s", out)
	}
	requireBlocked(t, out, "tmpdir", "repository", "git-dir")
	if x.Lease.State != Review {
		t.Fatalf("state %s: %s", x.Lease.State, x.Lease.Reason)
	}
}
