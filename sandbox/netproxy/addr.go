package netproxy

import "net/netip"

// specialPrefixes are ranges that netip's predicates do not name but that
// lead to the host or its networks rather than to the internet.
var specialPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),      // "this network": 0.x reaches the host itself on Linux
	netip.MustParsePrefix("100.64.0.0/10"),  // carrier-grade NAT, also VPN overlays (Tailscale)
	netip.MustParsePrefix("192.0.0.0/24"),   // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),  // benchmarking, used by fake-IP DNS proxies
	netip.MustParsePrefix("240.0.0.0/4"),    // reserved, and the broadcast address
	netip.MustParsePrefix("::/96"),          // IPv4-compatible (deprecated), with :: and ::1
	netip.MustParsePrefix("fec0::/10"),      // site-local (deprecated)
	netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64
}

// embedding are IPv6 ranges whose addresses carry an IPv4 address that the
// network may reach in their place: NAT64 (bytes 12-15) and 6to4 (bytes
// 2-5).
var embedding = []struct {
	prefix netip.Prefix
	at     int
}{
	{netip.MustParsePrefix("64:ff9b::/96"), 12},
	{netip.MustParsePrefix("2002::/16"), 2},
}

// special reports whether a is an address that only an exact allowlist
// entry may reach: loopback, private (RFC 1918, RFC 4193), link-local,
// unspecified, multicast, CGNAT and the other ranges above, also in
// IPv4-mapped, NAT64 and 6to4 form. An invalid address is special.
func special(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	if !a.IsGlobalUnicast() || a.IsPrivate() {
		return true
	}
	for _, p := range specialPrefixes {
		if p.Contains(a) {
			return true
		}
	}
	for _, e := range embedding {
		if e.prefix.Contains(a) {
			b := a.As16()
			return special(netip.AddrFrom4([4]byte(b[e.at : e.at+4])))
		}
	}
	return false
}
