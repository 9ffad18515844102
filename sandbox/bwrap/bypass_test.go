package bwrap

import (
	"strings"
	"testing"
)

func TestParseSNMPReadsTheCountersOfEachProtocol(t *testing.T) {
	snmp := `Ip: Forwarding DefaultTTL InReceives OutRequests OutDiscards OutNoRoutes ReasmTimeout
Ip: 2 64 18801 15000 0 7 0
IcmpMsg: InType3
IcmpMsg: 1
Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens AttemptFails
Tcp: 1 200 120000 -1 971 3
Udp: InDatagrams NoPorts InErrors OutDatagrams
Udp: 66 5 0 67
UdpLite: InDatagrams NoPorts InErrors OutDatagrams
UdpLite: 0 9 0 0
`
	got := parseSNMP(strings.NewReader(snmp))
	for key, want := range map[string]int64{"Ip:OutNoRoutes": 7, "Udp:NoPorts": 5, "UdpLite:NoPorts": 9, "Tcp:MaxConn": -1, "IcmpMsg:InType3": 1} {
		if got[key] != want {
			t.Errorf("%s = %d, want %d", key, got[key], want)
		}
	}
	six := parseSNMP6(strings.NewReader("Ip6InReceives                   \t12\nIp6OutNoRoutes                  \t4\nUdp6NoPorts \t2\n"))
	if six["Ip6OutNoRoutes"] != 4 || six["Udp6NoPorts"] != 2 {
		t.Errorf("snmp6: %v", six)
	}
}

func TestNilCountersCountNothing(t *testing.T) {
	var n *netCounters
	if b := n.finish(); b.NoRoute != 0 || b.ClosedUDP != 0 {
		t.Fatalf("%+v", b)
	}
}
