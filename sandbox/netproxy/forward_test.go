package netproxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// forward runs Forward on the host's loopback for socketPath and returns
// its address. Cleanup stops it and checks its result.
func forward(t *testing.T, socketPath string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Forward(ctx, l, socketPath) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Forward returned %v, want context.Canceled", err)
		}
	})
	return l.Addr().String()
}

// TestForwarderCarriesAConnectEndToEnd goes the whole way an agent's
// request goes: an HTTPS client configured by ProxyEnv's URL, the
// forwarder's TCP listener, the Unix socket, the proxy, the server.
func TestForwarderCarriesAConnectEndToEnd(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(hello))
	defer srv.Close()
	n := newFakeNet()
	n.host("api.test", "203.0.113.10")
	n.route("203.0.113.10:443", srv.Listener.Addr().String())
	p := &Proxy{Allow: mustAllow(t, "api.test:443")}
	fwd := forward(t, serveProxy(t, p, n))

	proxyURL, err := url.Parse("http://" + fwd)
	if err != nil {
		t.Fatal(err)
	}
	cfg := srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	cfg.ServerName = "example.com"
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL), TLSClientConfig: cfg}, Timeout: 10 * time.Second}
	if got := get(t, c, "https://api.test/fwd"); got != "hello /fwd" {
		t.Fatalf("body %q", got)
	}
	if _, err := c.Get("https://evil.test/"); err == nil {
		t.Fatal("a refused CONNECT succeeded through the forwarder")
	}
	s := summaryAfterClose(p)
	if s.Allowed != 1 || s.Refused != 1 || s.BytesDown == 0 {
		t.Fatalf("summary %+v", s)
	}
}

func TestForwarderClosesWhenTheSocketIsGone(t *testing.T) {
	fwd := forward(t, filepath.Join(t.TempDir(), "missing"))
	c, err := net.Dial("tcp", fwd)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("read data from a forwarder with no proxy")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the forwarder held the connection open")
	}
}

func TestProxyEnv(t *testing.T) {
	want := []string{
		"HTTPS_PROXY=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128",
		"HTTP_PROXY=http://127.0.0.1:3128", "http_proxy=http://127.0.0.1:3128",
		"ALL_PROXY=http://127.0.0.1:3128", "all_proxy=http://127.0.0.1:3128",
		"NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1",
	}
	if got := ProxyEnv("127.0.0.1:3128"); !slices.Equal(got, want) {
		t.Fatalf("ProxyEnv = %q\nwant %q", got, want)
	}
}
