package netproxy

import (
	"context"
	"net"
	"strings"
)

// Forward runs in the sandbox: it accepts the agent's connections on l (a
// listener on the sandbox's loopback, opened by the caller so that it can
// tell the host it is ready before the agent starts) and splices each to a
// new connection to the proxy's Unix socket at socketPath. It closes l and
// every connection when ctx ends, and returns ctx's error, or l's error if
// accepting fails otherwise. When the socket cannot be reached the agent's
// connection is closed at once; the proxy records nothing, having seen
// nothing.
func Forward(ctx context.Context, l net.Listener, socketPath string) error {
	defer context.AfterFunc(ctx, func() { l.Close() })()
	defer l.Close()
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		go func() {
			defer context.AfterFunc(ctx, func() { c.Close() })()
			var d net.Dialer
			up, err := d.DialContext(ctx, "unix", socketPath)
			if err != nil {
				c.Close()
				return
			}
			defer context.AfterFunc(ctx, func() { up.Close() })()
			splice(c, c, up)
		}()
	}
}

// ProxyEnv is the agent's proxy environment for a forwarder listening on
// listenAddr (host:port): HTTPS_PROXY, HTTP_PROXY, ALL_PROXY and NO_PROXY,
// each in upper and lower case, since clients disagree on which they read
// (curl reads http_proxy only in lower case; Go reads both; Python ignores
// HTTP_PROXY under CGI).
//
// NO_PROXY keeps the sandbox's own loopback out of the proxy:
// "localhost,127.0.0.1,::1". Inside the sandbox, loopback is the sandbox's
// (the agent's test servers, and the forwarder itself); were it proxied,
// curl, Python and Node would send a test's request for 127.0.0.1:8000 to
// the host, where the proxy refuses it and records a false security
// finding, or, worse, where an allowlisted host service on that port
// answers in the test server's place. Go's clients never proxy loopback
// anyway, so every client now agrees. An allowlisted loopback destination
// of the host (127.0.0.1:8080 in policy) is reached by the name HostAlias
// (host.lease.internal:8080), which NO_PROXY leaves to the proxy.
func ProxyEnv(listenAddr string) []string {
	url := "http://" + listenAddr
	vars := []struct{ name, value string }{
		{"HTTPS_PROXY", url}, {"HTTP_PROXY", url}, {"ALL_PROXY", url},
		{"NO_PROXY", "localhost,127.0.0.1,::1"},
	}
	env := make([]string, 0, 2*len(vars))
	for _, v := range vars {
		env = append(env, v.name+"="+v.value, strings.ToLower(v.name)+"="+v.value)
	}
	return env
}
