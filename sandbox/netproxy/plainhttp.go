package netproxy

import (
	"bufio"
	"net"
	"net/http"
	"strings"
)

// forwardHTTP sends req to up in origin form and its response back to c,
// without hop-by-hop headers, and ends both connections: the proxy serves
// one request per connection, and says so with Connection: close both
// ways. A client's Expect: 100-continue is dropped (the client then sends
// its body after its own short wait), interim 1xx responses are skipped,
// and an Upgrade is not passed on, so a plain ws:// connection fails
// (wss:// goes through CONNECT).
func forwardHTTP(c net.Conn, req *http.Request, up net.Conn, ev *Event) {
	defer up.Close()
	removeHopHeaders(req.Header)
	req.Header.Del("Expect")
	req.Close = true
	if err := req.Write(up); err != nil {
		ev.Detail = bounded("sending the request: " + err.Error())
		reply(c, http.StatusBadGateway, "git-lease network proxy: "+ev.Dest+": "+ev.Detail)
		return
	}
	br := bufio.NewReader(up)
	for {
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			ev.Detail = bounded("reading the response: " + err.Error())
			reply(c, http.StatusBadGateway, "git-lease network proxy: "+ev.Dest+": "+ev.Detail)
			return
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			continue
		}
		removeHopHeaders(resp.Header)
		resp.Close = true
		resp.Write(c)
		resp.Body.Close()
		return
	}
}

// hopHeaders concern one connection, not the request: a proxy removes
// them (RFC 9110, section 7.6.1), with the headers that Connection names.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

func removeHopHeaders(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			h.Del(strings.TrimSpace(name))
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}
