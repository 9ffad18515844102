// Command leftovers runs a command (the test suite) as a child subreaper and
// fails if any process it started outlives it: a runner, a sandbox, a
// stand-in. As a subreaper it inherits every orphan of the command's tree,
// detached runners (setsid, their starter gone) included, so what is left
// once the command has exited is exactly what the command started and did
// not end, and nothing another user or test run started on the same
// machine. Each one gets a few seconds to exit (waited for through a pidfd);
// those still running are named, killed, and make it exit 1.
//
//	go run ./scripts/leftovers -- go test ./...
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: leftovers -- COMMAND [ARG…]")
		os.Exit(2)
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "leftovers: cannot become a subreaper:", err)
		os.Exit(2)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	code := 0
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			fmt.Fprintln(os.Stderr, "leftovers:", err)
			os.Exit(2)
		}
		code = exit.ExitCode()
		if code < 0 {
			code = 1
		}
	}
	if left := leftovers(5 * time.Second); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "leftovers: %d process(es) the tests started outlived them (killed now):\n", len(left))
		for _, l := range left {
			fmt.Fprintln(os.Stderr, "  "+l)
		}
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// leftovers reaps this process's exited children, gives each living
// descendant up to grace to exit, then names and kills those that have not.
func leftovers(grace time.Duration) []string {
	reap()
	deadline := time.Now().Add(grace)
	var left []string
	for _, pid := range descendants(os.Getpid()) {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue // gone already
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			_, err := unix.Poll(fds, int(max(0, time.Until(deadline).Milliseconds())))
			if err != unix.EINTR {
				break
			}
		}
		if fds[0].Revents == 0 {
			left = append(left, fmt.Sprintf("pid %d: %s", pid, cmdline(pid)))
			unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		}
		unix.Close(fd)
	}
	reap()
	return left
}

// reap waits for every child that has exited, without blocking.
func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}

// descendants lists the processes below pid, parents before children.
func descendants(pid int) []int {
	var out []int
	for _, child := range children(pid) {
		out = append(out, child)
		out = append(out, descendants(child)...)
	}
	return out
}

// children reads the children of each of pid's threads from /proc.
func children(pid int) []int {
	var out []int
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	for _, t := range tasks {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/children")
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

func cmdline(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}
