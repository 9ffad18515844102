package bwrap

import (
	"os"
	"path/filepath"
	"strconv"
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

// decoys are the credential files the agent's home holds, relative to it.
var decoys = []string{
	".ssh/id_rsa", ".ssh/id_ed25519", ".aws/credentials", ".config/gcloud/application_default_credentials.json",
	".docker/config.json", ".kube/config", ".netrc", ".git-credentials",
}

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
// record: chmod aside, each begins with an open.
const decoyEvents = unix.IN_OPEN | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_DONT_FOLLOW

// decoyWatch records what happens to the decoys of a sandbox.
type decoyWatch struct {
	fd    int
	stop  [2]int // a pipe: the end of the watch
	paths map[int32]string
	done  chan struct{}
}

// watchDecoys watches the decoys of the sandbox whose init was pid (its
// mount namespace holds the scratch tmpfs), recording into rec, or
// returns nil when inotify is not to be had.
func watchDecoys(pid int, rec *recorder) *decoyWatch {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	w := &decoyWatch{fd: fd, paths: map[int32]string{}, done: make(chan struct{})}
	home := "/proc/" + strconv.Itoa(pid) + "/root" + filepath.Join(stageDir, stageScratch, "home")
	for _, d := range decoys {
		// The agent has not run yet: the paths are the init's.
		wd, err := unix.InotifyAddWatch(fd, filepath.Join(home, d), decoyEvents)
		if err == nil {
			w.paths[int32(wd)] = filepath.Join(agentHome, d)
		}
	}
	if len(w.paths) == 0 || unix.Pipe2(w.stop[:], unix.O_CLOEXEC) != nil {
		unix.Close(fd)
		return nil
	}
	go w.serve(rec)
	return w
}

// serve records the events as they come, and once told to stop, those
// still queued: the kernel queues an event during the call that causes
// it, so after the sandbox has ended the queue holds every one.
func (w *decoyWatch) serve(rec *recorder) {
	defer close(w.done)
	defer unix.Close(w.fd)
	defer unix.Close(w.stop[0])
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}, {Fd: int32(w.stop[0]), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err == unix.EINTR {
			continue
		} else if err != nil {
			return
		}
		stopping := fds[1].Revents != 0
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
