package netproxy

import (
	"encoding/json"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestParseDest(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Dest
	}{
		{"api.example.com:443", Dest{Host: "api.example.com", Port: 443}},
		{"API.Example.COM.:443", Dest{Host: "api.example.com", Port: 443}},
		{"*.example.org:443", Dest{Host: "example.org", Port: 443, Wildcard: true}},
		{"127.0.0.1:8080", Dest{Host: "127.0.0.1", Port: 8080}},
		{"[::1]:8080", Dest{Host: "::1", Port: 8080}},
		{"[::ffff:10.0.0.1]:1", Dest{Host: "10.0.0.1", Port: 1}},
		{"[2001:DB8::1]:65535", Dest{Host: "2001:db8::1", Port: 65535}},
		{"localhost:3000", Dest{Host: "localhost", Port: 3000}},
		{"xn--bcher-kva.example:443", Dest{Host: "xn--bcher-kva.example", Port: 443}},
		{"1a.example:443", Dest{Host: "1a.example", Port: 443}},
	} {
		got, err := ParseDest(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseDest(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{
		"", "api.example.com", "api.example.com:", "api.example.com:0", "api.example.com:65536",
		"api.example.com:+443", "api.example.com:0443", "api.example.com:https", ":443",
		"*.example.org", "*:443", "*.*.example.org:443", "a.*.example.org:443", "*.127.0.0.1:443",
		"::1:8080", "[example.com]:443", "[fe80::1%eth0]:443", "a_b.example:443", "a..b:443",
		"-a.example:443", "a-.example:443", "bücher.example:443", "\u212aelvin.example:443",
		"127.1:443", "0x7f.1:443", "example.123:443", "a.0x1F:443", "api.example.com..:443",
		"http://api.example.com:443", "api.example.com:443/x", "user@api.example.com:443",
		"host.lease.internal:11434", "Host.Lease.Internal.:11434",
		strings.Repeat("a", 64) + ".example:443", strings.Repeat("abcdefghi.", 26) + "com:443",
	} {
		if d, err := ParseDest(in); !errors.Is(err, ErrBadDest) {
			t.Errorf("ParseDest(%q) = %+v, %v; want ErrBadDest", in, d, err)
		}
	}
}

func TestDestTextRoundTrips(t *testing.T) {
	var got struct{ Allow Allowlist }
	in := `{"Allow":["*.example.org:443","[::1]:8080","api.example.com:443"]}`
	if err := json.Unmarshal([]byte(in), &got); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(got)
	if string(out) != in {
		t.Fatalf("round trip gave %s", out)
	}
	if err := json.Unmarshal([]byte(`{"Allow":["api.example.com"]}`), &got); !errors.Is(err, ErrBadDest) {
		t.Fatalf("decoding a destination without a port: %v", err)
	}
}

func TestCovers(t *testing.T) {
	wild, exact, ip6 := mustAllow(t, "*.example.org:443")[0], mustAllow(t, "api.example.com:443")[0], mustAllow(t, "[::1]:8080")[0]
	for _, tc := range []struct {
		d    Dest
		host string
		port int
		want bool
	}{
		{wild, "a.example.org", 443, true},
		{wild, "A.B.Example.Org.", 443, true},
		{wild, "example.org", 443, false},
		{wild, "evilexample.org", 443, false},
		{wild, "a.example.org.evil.com", 443, false},
		{wild, "a.example.org", 80, false},
		{exact, "API.example.com", 443, true},
		{exact, "x.api.example.com", 443, false},
		{exact, "api.example.com", 8443, false},
		{ip6, "::1", 8080, true},
		{ip6, "0:0:0:0:0:0:0:1", 8080, true},
		{ip6, "[::1]", 8080, false},
		{exact, "api.example.com:443", 443, false},
	} {
		if got := tc.d.Covers(tc.host, tc.port); got != tc.want {
			t.Errorf("%s covers %s port %d = %v, want %v", tc.d, tc.host, tc.port, got, tc.want)
		}
	}
}

func TestCheck(t *testing.T) {
	a := mustAllow(t, "*.example.org:443", "db.example.org:443", "10.0.0.5:5432")
	for _, tc := range []struct {
		host string
		port int
		want Decision
	}{
		{"a.example.org", 443, Decision{Allowed: true}},
		{"db.example.org", 443, Decision{Allowed: true, Verbatim: true}},
		{"example.org", 443, Decision{Reason: ReasonNotAllowlisted}},
		{"10.0.0.5", 5432, Decision{Allowed: true, Verbatim: true}},
		{"10.0.0.5", 443, Decision{Reason: ReasonIPLiteral}},
		{"::ffff:10.0.0.5", 5432, Decision{Allowed: true, Verbatim: true}},
		{"not a host", 443, Decision{Reason: ReasonNotAllowlisted}},
	} {
		if got := a.Check(tc.host, tc.port); got != tc.want {
			t.Errorf("Check(%s, %d) = %+v, want %+v", tc.host, tc.port, got, tc.want)
		}
	}
	if got := (Allowlist{}).Check("a.example.org", 443); got.Allowed {
		t.Error("the empty allowlist allowed a destination")
	}
}

func TestNarrow(t *testing.T) {
	trusted := mustAllow(t, "*.example.org:443", "db.example.org:443", "api.example.com:443", "127.0.0.1:8080")
	got, err := trusted.Narrow(mustAllow(t, "*.a.example.org:443", "*.example.org:443", "db.example.org:443", "x.example.org:443", "127.0.0.1:8080"))
	if err != nil {
		t.Fatal(err)
	}
	verbatim := map[string]bool{"db.example.org:443": true, "x.example.org:443": false, "127.0.0.1:8080": true}
	for host, want := range verbatim {
		h, p, _ := splitHostPort(host)
		if d := got.Check(h, p); !d.Allowed || d.Verbatim != want {
			t.Errorf("narrowed Check(%s) = %+v, want verbatim %v", host, d, want)
		}
	}
	if d := got.Check("api.example.com", 443); d.Allowed {
		t.Error("narrowing kept a destination that was not asked for")
	}
	// Narrowing twice cannot turn a wildcard's name into a verbatim one.
	again, err := got.Narrow(mustAllow(t, "x.example.org:443"))
	if err != nil || again.Check("x.example.org", 443).Verbatim {
		t.Errorf("narrowing again: %+v, %v", again, err)
	}
	for _, wider := range []string{"*.com:443", "example.org:443", "api.example.com:80", "*.example.com:443", "*.api.example.com:443", "127.0.0.2:8080", "[::1]:8080"} {
		if _, err := trusted.Narrow(mustAllow(t, wider)); !errors.Is(err, ErrWiden) || !strings.Contains(err.Error(), wider) {
			t.Errorf("Narrow(%s) = %v, want ErrWiden naming it", wider, err)
		}
	}
	if got, err := trusted.Narrow(nil); err != nil || len(got) != 0 {
		t.Errorf("Narrow(nil) = %v, %v; want nothing", got, err)
	}
}

func TestSpecialAddresses(t *testing.T) {
	for _, a := range []string{
		"127.0.0.1", "127.255.0.1", "10.0.0.1", "172.16.0.1", "192.168.1.1", "169.254.169.254",
		"0.0.0.0", "0.1.2.3", "100.64.0.1", "100.127.255.254", "192.0.0.8", "198.18.0.1", "224.0.0.1",
		"239.255.255.250", "240.0.0.1", "255.255.255.255",
		"::", "::1", "::127.0.0.1", "fc00::1", "fd12:3456::1", "fe80::1", "fe80::1%eth0", "fec0::1", "ff02::1",
		"::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "64:ff9b::7f00:1",
		"64:ff9b::a9fe:a9fe", "64:ff9b:1::1", "2002:7f00:1::1", "2002:c0a8:101::1",
	} {
		if !special(netip.MustParseAddr(a)) {
			t.Errorf("%s is not special", a)
		}
	}
	for _, a := range []string{
		"1.1.1.1", "8.8.8.8", "203.0.113.10", "100.63.255.255", "100.128.0.0", "172.32.0.1",
		"2606:4700::1111", "::ffff:1.1.1.1", "64:ff9b::101:101", "2002:101:101::1",
	} {
		if special(netip.MustParseAddr(a)) {
			t.Errorf("%s is special", a)
		}
	}
	if !special(netip.Addr{}) {
		t.Error("the invalid address is not special")
	}
}
