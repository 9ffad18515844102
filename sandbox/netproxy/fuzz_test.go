package netproxy

import (
	"bufio"
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

func FuzzParseDest(f *testing.F) {
	for _, seed := range []string{
		"api.example.com:443", "*.example.org:443", "127.0.0.1:8080", "[::1]:8080", "[::ffff:10.0.0.1]:1",
		"API.example.com.:443", "*.127.0.0.1:443", "0x7f.1:80", "[fe80::1%eth0]:443", "a_b:1", "\u212a.example:1",
		"example.com:0443", "*.:1", "[example.com]:443", "1.2.3:4",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDest(s)
		if err != nil {
			if !errors.Is(err, ErrBadDest) {
				t.Fatalf("ParseDest(%q): %v does not wrap ErrBadDest", s, err)
			}
			return
		}
		if d.Port < 1 || d.Port > 65535 {
			t.Fatalf("ParseDest(%q) port %d", s, d.Port)
		}
		if a, err := netip.ParseAddr(d.Host); err == nil {
			if d.Wildcard || a.Zone() != "" || a.Is4In6() || a.String() != d.Host {
				t.Fatalf("ParseDest(%q) = %+v: not a canonical address", s, d)
			}
		} else if checkName(d.Host) != nil || strings.ToLower(d.Host) != d.Host {
			t.Fatalf("ParseDest(%q) = %+v: not a canonical name", s, d)
		}
		again, err := ParseDest(d.String())
		if err != nil || again != d {
			t.Fatalf("ParseDest(%q) = %+v, but its String %q reads as %+v, %v", s, d, d.String(), again, err)
		}
		if d.Covers(d.Host, d.Port) == d.Wildcard || d.Covers(d.Host, d.Port%65535+1) {
			t.Fatalf("%+v: a destination covers its own host on its port only, and a wildcard never its domain", d)
		}
	})
}

func FuzzReadRequest(f *testing.F) {
	for _, seed := range []string{
		"CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n",
		"CONNECT [::1]:8080 HTTP/1.1\r\n\r\n",
		"CONNECT 127.0.0.1:8080 HTTP/1.0\r\n\r\n",
		"CONNECT /x HTTP/1.1\r\n\r\n",
		"CONNECT a_b:443 HTTP/1.1\r\n\r\n",
		"GET http://api.example.com/x?y=1 HTTP/1.1\r\nHost: evil.example\r\n\r\n",
		"GET http://[::1]:8080/ HTTP/1.1\r\n\r\n",
		"GET http://user:pw@api.example.com:80/ HTTP/1.1\r\n\r\n",
		"POST http://api.example.com:8080/ HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc",
		"GET https://api.example.com/ HTTP/1.1\r\n\r\n",
		"GET /x HTTP/1.1\r\nHost: api.example.com\r\n\r\n",
		"GET http://[fe80::1%25eth0]/ HTTP/1.1\r\n\r\n",
		"GET http://0x7f.1/ HTTP/1.1\r\n\r\n",
		"GET http://api.example.com:0/ HTTP/1.1\r\n\r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		req, tg, err := readRequest(bufio.NewReader(strings.NewReader(string(b))))
		if err != nil {
			return
		}
		if req.Method != http.MethodConnect && req.URL.Scheme != "http" {
			t.Fatalf("accepted a %s request for %q", req.Method, req.RequestURI)
		}
		d, err := ParseDest(tg.String())
		if err != nil || d.Host != tg.host || d.Port != tg.port || d.Wildcard {
			t.Fatalf("target %+v reads as %+v, %v", tg, d, err)
		}
		if _, err := netip.ParseAddr(tg.host); (err == nil) != tg.ip {
			t.Fatalf("target %+v: ip is %v", tg, tg.ip)
		}
		if !(Allowlist{d}).Check(tg.host, tg.port).Allowed {
			t.Fatalf("target %+v is not covered by itself", tg)
		}
	})
}
