package bwrap

import (
	"bufio"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/git-lease/git-lease/sandbox"
)

// process is a launched sandbox that also counts what its network stack
// refused to send (sandbox.BypassCounter), records its agent's escape
// attempts (sandbox.EscapeRecorder) and names the processes that hold it
// (sandbox.Holders).
type process struct {
	*sandbox.Proc
	*sharedFiles
	counters *netCounters
	recorder *recorder
	once     sync.Once
	bypass   sandbox.Bypass
	escapes  sandbox.Escapes
	holders  []int
}

// Holders are bwrap and the first process of the sandbox's PID namespace.
func (p *process) Holders() []int { return p.holders }

// Wait waits for the sandbox, then takes the last count of its network
// stack and the record of its escape attempts.
func (p *process) Wait() (sandbox.Exit, error) {
	exit, err := p.Proc.Wait()
	p.once.Do(func() {
		p.bypass = p.counters.finish()
		p.escapes = p.recorder.finish()
	})
	return exit, err
}

// Escapes is what the agent tried that the sandbox refused.
func (p *process) Escapes() sandbox.Escapes { return p.escapes }

// Bypass is what the sandbox's network stack refused while the agent ran.
func (p *process) Bypass() sandbox.Bypass { return p.bypass }

// netCounters reads the kernel's statistics of the sandbox's network
// namespace through /proc/<pid>/net files opened on its first process. An
// open file keeps the namespace readable after the sandbox has ended, so
// the last count includes the agent's last attempt, and the agent can
// neither see nor change what the host reads. A nil *netCounters counts
// nothing.
type netCounters struct {
	snmp, snmp6 *os.File
	start       sandbox.Bypass
}

// openCounters opens the statistics of pid's network namespace and takes
// the count before the agent runs. It returns nil when /proc cannot be read.
func openCounters(pid int) *netCounters {
	dir := "/proc/" + strconv.Itoa(pid) + "/net/"
	snmp, err := os.Open(dir + "snmp")
	if err != nil {
		return nil
	}
	n := &netCounters{snmp: snmp}
	if snmp6, err := os.Open(dir + "snmp6"); err == nil {
		n.snmp6 = snmp6 // absent when IPv6 is off
	}
	n.start = n.read()
	return n
}

// finish returns what was refused since openCounters, and closes the files.
func (n *netCounters) finish() sandbox.Bypass {
	if n == nil {
		return sandbox.Bypass{}
	}
	end := n.read()
	n.snmp.Close()
	if n.snmp6 != nil {
		n.snmp6.Close()
	}
	return sandbox.Bypass{NoRoute: end.NoRoute - n.start.NoRoute, ClosedUDP: end.ClosedUDP - n.start.ClosedUDP}
}

func (n *netCounters) read() sandbox.Bypass {
	v4 := readStats(n.snmp, parseSNMP)
	b := sandbox.Bypass{NoRoute: v4["Ip:OutNoRoutes"], ClosedUDP: v4["Udp:NoPorts"]}
	if n.snmp6 != nil {
		v6 := readStats(n.snmp6, parseSNMP6)
		b.NoRoute += v6["Ip6OutNoRoutes"]
		b.ClosedUDP += v6["Udp6NoPorts"]
	}
	return b
}

func readStats(f *os.File, parse func(io.Reader) map[string]int64) map[string]int64 {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil
	}
	return parse(f)
}

// parseSNMP reads /proc/net/snmp, where each protocol has a line of names
// and then a line of values ("Ip: Forwarding …" / "Ip: 1 …"), into
// "Proto:Name" keys.
func parseSNMP(r io.Reader) map[string]int64 {
	out := map[string]int64{}
	sc := bufio.NewScanner(r)
	var names []string
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		if _, err := strconv.ParseInt(fields[1], 10, 64); err != nil {
			names = fields
			continue
		}
		if len(names) != len(fields) || names[0] != fields[0] {
			continue
		}
		for i := 1; i < len(fields); i++ {
			v, _ := strconv.ParseInt(fields[i], 10, 64)
			out[fields[0]+names[i]] = v
		}
	}
	return out
}

// parseSNMP6 reads /proc/net/snmp6: one "Name value" pair per line.
func parseSNMP6(r io.Reader) map[string]int64 {
	out := map[string]int64{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 {
			v, _ := strconv.ParseInt(f[1], 10, 64)
			out[f[0]] = v
		}
	}
	return out
}
