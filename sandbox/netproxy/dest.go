package netproxy

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// ErrBadDest is wrapped by every error about a destination's spelling.
var ErrBadDest = errors.New("not a network destination (want host:port, *.domain:port, 1.2.3.4:port or [::1]:port)")

// Dest is one allowlisted destination: a host name, every proper subdomain
// of a domain (Wildcard), or an IP address, on one port. Names and
// addresses mean what they mean on the host, where the proxy runs:
// 127.0.0.1:8080 is a service on the host's loopback.
type Dest struct {
	// Host is a lowercase name without a trailing dot, the domain under
	// "*." for a wildcard, or an IP address in its canonical form (IPv4
	// for an IPv4-mapped IPv6 address).
	Host string
	// Port is the one port allowed, 1 to 65535.
	Port int
	// Wildcard makes the destination cover every name that ends in "."+Host
	// (a.example.org and a.b.example.org), but not Host itself.
	Wildcard bool
	// viaWildcard marks a name that Narrow admitted through a wildcard: it
	// was never listed verbatim in trusted policy, so it may not reach
	// private addresses.
	viaWildcard bool
}

// ParseDest parses "host:port", "*.domain:port", "1.2.3.4:port" or
// "[::1]:port". Names are lowercased and lose one trailing dot; they must be
// ASCII host names (IDNA names in their xn-- form). The port is required.
func ParseDest(s string) (Dest, error) {
	hostport := s
	wildcard := strings.HasPrefix(s, "*.")
	if wildcard {
		hostport = s[2:]
	}
	host, port, err := splitHostPort(hostport)
	if err != nil {
		return Dest{}, fmt.Errorf("%w: %q: %v", ErrBadDest, s, err)
	}
	h, ip, err := canonHost(host)
	if err != nil {
		return Dest{}, fmt.Errorf("%w: %q: %v", ErrBadDest, s, err)
	}
	if wildcard && ip {
		return Dest{}, fmt.Errorf("%w: %q: a wildcard needs a domain name, not an IP address", ErrBadDest, s)
	}
	if h == HostAlias && !wildcard {
		return Dest{}, fmt.Errorf("%w: %q: %s is how the sandbox names the host's loopback: allow 127.0.0.1:%d instead", ErrBadDest, s, HostAlias, port)
	}
	return Dest{Host: h, Port: port, Wildcard: wildcard}, nil
}

// String is the destination as ParseDest reads it.
func (d Dest) String() string {
	s := net.JoinHostPort(d.Host, fmt.Sprint(d.Port))
	if d.Wildcard {
		return "*." + s
	}
	return s
}

// MarshalText writes String, so that a Dest is a plain string in JSON and
// TOML. A destination that Narrow admitted through a wildcard loses that
// mark: rebuild a running allowlist from trusted policy, not from its text.
func (d Dest) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads a destination with ParseDest.
func (d *Dest) UnmarshalText(b []byte) error {
	p, err := ParseDest(string(b))
	if err != nil {
		return err
	}
	*d = p
	return nil
}

// Covers reports whether the destination allows host:port. Host may be a
// name in any case, with or without a trailing dot, or an IP address; an
// IPv6 address is given without brackets. An invalid host is not covered.
func (d Dest) Covers(host string, port int) bool {
	h, ip, err := canonHost(host)
	if err != nil || port != d.Port {
		return false
	}
	if d.Wildcard {
		return !ip && strings.HasSuffix(h, "."+d.Host)
	}
	return h == d.Host
}

// splitHostPort splits "host:port" or "[v6]:port" and checks the port.
// Brackets are only for IPv6 addresses.
func splitHostPort(s string) (string, int, error) {
	host, portStr, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, err
	}
	if strings.HasPrefix(s, "[") != strings.Contains(host, ":") {
		return "", 0, errors.New("an IPv6 address must be in brackets, and only an IPv6 address")
	}
	port, err := parsePort(portStr)
	return host, port, err
}

// parsePort accepts a decimal port from 1 to 65535 written without a sign
// or leading zeros.
func parsePort(s string) (int, error) {
	if s == "" || len(s) > 5 || s[0] == '0' {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", s)
	}
	n := 0
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("port %q is not a number from 1 to 65535", s)
		}
		n = n*10 + int(c-'0')
	}
	if n > 65535 {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", s)
	}
	return n, nil
}

// canonHost returns the canonical form of a host name or IP address, and
// whether it is an IP address. Zones are refused: they name an interface
// of the host, not a destination.
func canonHost(host string) (string, bool, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return "", false, fmt.Errorf("IP address %q has a zone", host)
		}
		return a.Unmap().String(), true, nil
	}
	if strings.Contains(host, ":") {
		return "", false, fmt.Errorf("%q is not an IP address", host)
	}
	name := strings.TrimSuffix(host, ".")
	// checkName admits ASCII only, so ToLower cannot turn a non-ASCII
	// rune into an ASCII letter (the Kelvin sign into 'k').
	if err := checkName(name); err != nil {
		return "", false, err
	}
	return strings.ToLower(name), false, nil
}

// checkName accepts an ASCII host name: labels of letters, digits and
// inner hyphens, at most 63 bytes each and 253 in all. A last label that
// is a number (12, 0x7f) is refused: URL parsers and inet_aton read such a
// name as an IPv4 address (127.1, 0x7f.1).
func checkName(name string) error {
	if name == "" || len(name) > 253 {
		return fmt.Errorf("host name %q is empty or longer than 253 bytes", name)
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return fmt.Errorf("host name %q has an empty label, one over 63 bytes, or one that starts or ends with '-'", name)
		}
		for _, c := range []byte(l) {
			if !isAlnum(c) && c != '-' {
				return fmt.Errorf("host name %q has a byte %q that no host name has (write IDNA names as xn--)", name, c)
			}
		}
	}
	if looksNumeric(labels[len(labels)-1]) {
		return fmt.Errorf("host name %q ends in a number: write an IP address as 1.2.3.4", name)
	}
	return nil
}

// looksNumeric is the WHATWG URL standard's "ends in a number" test for
// one label: all decimal digits, or 0x followed by hex digits.
func looksNumeric(l string) bool {
	digits := l
	hex := len(l) >= 2 && l[0] == '0' && (l[1] == 'x' || l[1] == 'X')
	if hex {
		digits = l[2:]
	}
	for _, c := range []byte(digits) {
		if !(c >= '0' && c <= '9' || hex && (c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F')) {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
