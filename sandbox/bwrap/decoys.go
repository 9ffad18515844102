package bwrap

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The sandbox shows none of the host's secrets, so an agent that looks for
// them finds nothing, and nothing records that it looked. Decoys fix that
// at no cost to any other file access: files at the well-known credential
// paths of the agent's home (on the scratch tmpfs), which the init writes
// before bwrap runs and the host watches with inotify while the agent
// runs. Opening one, removing or renaming it is an attempt on the secrets
// a host keeps there; no ordinary build or test opens them.
//
// The same goes for the docker socket, which gives whoever reaches it the
// host: a decoy socket at /var/run/docker.sock (and /run/docker.sock, a
// symlink to it), on which the host accepts, records the connection and
// hangs up;
// and for the environment of the sandbox's processes that are not the
// agent's (PID 1, where a container keeps its secrets, is the gate that
// becomes the agent; the network forwarder), which the host watches with
// inotify too.

// decoys are the credential files the agent's home holds, relative to it.
var decoys = []string{
	".ssh/id_rsa", ".ssh/id_ed25519", ".aws/credentials", ".config/gcloud/application_default_credentials.json",
	".docker/config.json", ".kube/config", ".netrc", ".git-credentials",
}

// decoyRun is the scratch tmpfs's directory that the sandbox shows,
// read-only, at /var/run, and dockerSocket the decoy socket in it.
const (
	decoyRun     = "run"
	dockerSocket = "docker.sock"
)

// decoyContent says what a decoy is to whoever reads one: the reading is
// what counts, and it is recorded already.
const decoyContent = "This sandbox holds no credentials. git-lease recorded that this file was opened.\n"

// writeDecoys puts the decoys into home, the scratch tmpfs's home as the
// init stages it.
func writeDecoys(home string) error {
	for _, d := range decoys {
		path := filepath.Join(home, d)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(decoyContent), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// decoyEvents are what the host watches a decoy for: an open (to read or
// to write), a removal and a rename. A write or chmod needs no other
// record: chmod aside, each begins with an open. Closes are watched only
// to separate opens: the kernel merges an event into the last one queued
// when the two are the same, so two opens in a row, read late, would
// count as one.
const decoyEvents = unix.IN_OPEN | unix.IN_CLOSE | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_DONT_FOLLOW

// decoyWatch records what happens to the decoys of a sandbox.
type decoyWatch struct {
	fd      int
	stop    [2]int // a pipe: the end of the watch
	paths   map[int32]string
	environ map[int32]string // the watched environments, by watch
	pinned  []int            // O_PATH descriptors that keep the watched /proc files the ones looked up
	docker  int              // the decoy docker socket, listening; -1 without
	done    chan struct{}
}

// watchDecoys watches the decoys of the sandbox whose init was pid (its
// mount namespace holds the scratch tmpfs) and whose agent is agent (a
// host PID: its root is the sandbox's), recording into rec, or returns
// nil when inotify is not to be had. It runs before the agent does: the
// paths are the init's and bwrap's.
func watchDecoys(pid, agent, docker int, rec *recorder) *decoyWatch {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		if docker >= 0 {
			unix.Close(docker)
		}
		return nil
	}
	w := &decoyWatch{fd: fd, paths: map[int32]string{}, environ: map[int32]string{}, docker: docker, done: make(chan struct{})}
	scratch := "/proc/" + strconv.Itoa(pid) + "/root" + filepath.Join(stageDir, stageScratch)
	for _, d := range decoys {
		wd, err := unix.InotifyAddWatch(fd, filepath.Join(scratch, "home", d), decoyEvents)
		if err == nil {
			w.paths[int32(wd)] = filepath.Join(agentHome, d)
		}
	}
	w.watchEnviron(agent)
	if len(w.paths) == 0 || unix.Pipe2(w.stop[:], unix.O_CLOEXEC) != nil {
		w.close()
		return nil
	}
	go w.serve(rec)
	return w
}

// watchEnviron watches the environ of every process of the agent's
// sandbox but the agent's first (still the gate), and of PID 1. Each file
// stays open (O_PATH, which reads nothing): /proc makes a new file at the
// next lookup once nothing holds the old one, and the watch would be on
// the old.
func (w *decoyWatch) watchEnviron(agent int) {
	procDir := "/proc/" + strconv.Itoa(agent) + "/root/proc"
	entries, err := os.ReadDir(procDir)
	if err != nil {
		return
	}
	self := agentSandboxPID(agent)
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil || n == self && n != 1 {
			continue
		}
		for _, p := range []string{e.Name() + "/environ", e.Name() + "/task/" + e.Name() + "/environ"} {
			pin, err := unix.Open(filepath.Join(procDir, p), unix.O_PATH|unix.O_CLOEXEC, 0)
			if err != nil {
				continue
			}
			w.pinned = append(w.pinned, pin)
			if wd, err := unix.InotifyAddWatch(w.fd, "/proc/self/fd/"+strconv.Itoa(pin), unix.IN_OPEN|unix.IN_CLOSE); err == nil { // closes: see decoyEvents
				w.environ[int32(wd)] = "/proc/" + p
			}
		}
	}
}

// agentSandboxPID is the PID of host process pid in its innermost PID
// namespace, the sandbox's; 0 when it cannot be read.
func agentSandboxPID(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.Atoi(f[len(f)-1])
				return n
			}
		}
	}
	return 0
}

// listenDecoy makes the decoy docker socket in the scratch tmpfs's
// decoyRun (see listenSocket).
func listenDecoy() int {
	return listenSocket(filepath.Join(stageDir, stageScratch, decoyRun, dockerSocket))
}

// listenSocket makes a Unix socket at path, on the scratch tmpfs,
// listening, which any user may connect to, or returns -1. The init makes
// it, since only a uid of its user namespace may create a file on its
// tmpfs, and hands it to the host (see sendSocket).
func listenSocket(path string) int {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		unix.Close(fd)
		return -1
	}
	// Connecting needs write permission on the socket's file.
	if unix.Chmod(path, 0o666) != nil || unix.Listen(fd, 64) != nil {
		unix.Close(fd)
		return -1
	}
	return fd
}

// close closes the watch's descriptors.
func (w *decoyWatch) close() {
	unix.Close(w.fd)
	for _, fd := range append(w.pinned, w.docker) {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// serve records the events as they come, and once told to stop, those
// still queued: the kernel queues an event during the call that causes
// it, so after the sandbox has ended the queue holds every one.
func (w *decoyWatch) serve(rec *recorder) {
	defer close(w.done)
	defer w.close()
	defer unix.Close(w.stop[0])
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}, {Fd: int32(w.stop[0]), Events: unix.POLLIN},
			{Fd: int32(w.docker), Events: unix.POLLIN}} // a negative descriptor is left out
		if _, err := unix.Poll(fds, -1); err == unix.EINTR {
			continue
		} else if err != nil {
			return
		}
		stopping := fds[1].Revents != 0
		// A connection counts once the kernel queued it, accepted or not.
		for w.docker >= 0 {
			conn, _, err := unix.Accept4(w.docker, unix.SOCK_CLOEXEC)
			if err == unix.EINTR || err == unix.ECONNABORTED {
				continue
			}
			if err != nil {
				break
			}
			unix.Close(conn)
			rec.record("secrets", "connect", "/var/run/"+dockerSocket)
		}
		for {
			n, err := unix.Read(w.fd, buf)
			if err == unix.EINTR {
				continue
			}
			if err != nil || n <= 0 {
				break
			}
			w.record(rec, buf[:n])
		}
		if stopping {
			return
		}
	}
}

// record records the events in b, a read's worth of struct inotify_event.
func (w *decoyWatch) record(rec *recorder, b []byte) {
	for len(b) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
		b = b[min(len(b), unix.SizeofInotifyEvent+int(ev.Len)):]
		if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
			rec.record("secrets", "inotify", "(events lost: the queue overflowed)")
			continue
		}
		if path, ok := w.environ[ev.Wd]; ok {
			if ev.Mask&unix.IN_OPEN != 0 {
				rec.record("environ", "open", path)
			}
			continue
		}
		path, ok := w.paths[ev.Wd]
		if !ok {
			continue
		}
		switch {
		case ev.Mask&unix.IN_OPEN != 0:
			rec.record("secrets", "open", path)
		case ev.Mask&unix.IN_DELETE_SELF != 0:
			rec.record("secrets", "unlink", path)
		case ev.Mask&unix.IN_MOVE_SELF != 0:
			rec.record("secrets", "rename", path)
		}
	}
}

// finish records what is still queued and ends the watch. A nil watch
// does nothing.
func (w *decoyWatch) finish() {
	if w == nil {
		return
	}
	unix.Close(w.stop[1])
	<-w.done
}

// sendSocket hands the host a listening socket (or says there is none) on
// the mounts socket, and closes it.
func sendSocket(sock, fd int) error {
	if fd < 0 {
		return unix.Sendmsg(sock, []byte{'n'}, nil, nil, 0)
	}
	defer unix.Close(fd)
	return unix.Sendmsg(sock, []byte{'d'}, unix.UnixRights(fd), nil, 0)
}

// receiveSocket is the host's side of sendSocket: the socket, or -1. what
// names it in errors.
func receiveSocket(sock *os.File, what string) (int, error) {
	b := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(int(sock.Fd()), b, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil || n == 0 {
		return -1, fmt.Errorf("the sandbox's init did not report its %s (%v)", what, err)
	}
	if b[0] != 'd' {
		return -1, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return -1, fmt.Errorf("receive the %s: %d messages, %v", what, len(msgs), err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return -1, fmt.Errorf("receive the %s: %d descriptors, %v", what, len(fds), err)
	}
	return fds[0], nil
}
