package bwrap

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/git-lease/git-lease/sandbox"
	"github.com/git-lease/git-lease/sandbox/netproxy"
)

// The lease's network as the agent sees it: the git-lease binary and the
// proxy's socket bound in, and the forwarder on the sandbox's own loopback
// (bwrap's network namespace has nothing else). The socket is made by the
// sandbox's init, as proxySocket on its scratch tmpfs, and served by the
// host through the listening descriptor the init hands it.
const (
	selfInSandbox   = "/run/lease/git-lease"
	socketInSandbox = "/run/lease/proxy.sock"
	proxySocket     = "proxy.sock"
	forwardAddr     = "127.0.0.1:3128"
)

// serveProxy serves the lease's proxy on the listening socket fd, which
// it takes, until the proxy is closed.
func serveProxy(p sandbox.Proxy, fd int) {
	f := os.NewFile(uintptr(fd), "proxy.sock")
	l, err := net.FileListener(f)
	f.Close()
	if err != nil {
		return // the forwarder's connections fail, and the proxy records none
	}
	go p.Serve(l)
}

// ForwardArg is the hidden first argument with which git-lease runs as the
// sandbox's network forwarder: git-lease __netfwd ADDR SOCKET.
const ForwardArg = "__netfwd"

// forwarderThreads is the headroom the forwarder needs under the process
// bound: RLIMIT_NPROC counts threads, and the Go runtime starts several.
const forwarderThreads = 16

// RunForwarder runs as the sandbox's forwarder and never returns. It
// listens on ADDR (args[0]), says "ready" on standard output and closes it,
// so that the gate knows the agent's proxy answers before it lets the agent
// run, then relays every connection to the proxy's socket SOCKET (args[1])
// until the sandbox ends. A failure is printed on standard error, exit 125.
func RunForwarder(args []string) {
	err := forward(args)
	fmt.Fprintf(os.Stderr, "git-lease network forwarder: %v\n", err)
	os.Exit(125)
}

func forward(args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("usage: git-lease %s ADDR SOCKET", ForwardArg)
	}
	l, err := net.Listen("tcp", args[0])
	if err != nil {
		return err
	}
	if _, err := io.WriteString(os.Stdout, "ready\n"); err != nil {
		return err
	}
	os.Stdout.Close()
	return netproxy.Forward(context.Background(), l, args[1])
}

// forwarderScript starts the forwarder before the gate reports the sandbox
// ready, and fails the sandbox's start when the forwarder does not answer.
// The forwarder keeps none of the gate's descriptors (the host's ready and
// go pipes, the agent's standard input).
const forwarderScript = `fwd=$(` + selfInSandbox + ` ` + ForwardArg + ` ` + forwardAddr + ` ` + socketInSandbox +
	` </dev/null 3<&- 4>&- 5<&- &) && [ "$fwd" = ready ] || exit 125; `

// networkEnv is what the agent's environment adds for a network: the proxy
// variables that point its HTTP clients at the forwarder.
func networkEnv(spec sandbox.Spec) []string {
	if spec.Proxy == nil {
		return nil
	}
	return netproxy.ProxyEnv(forwardAddr)
}
