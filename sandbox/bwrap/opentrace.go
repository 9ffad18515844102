package bwrap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A write outside the agent's places that starts with an open (echo x >
// /etc/f) is refused by the kernel. Sending every open that asks to write
// to the recorder (record_opens) would record it, at a round trip per
// write of a build. Where the host may use the kernel's syscall
// tracepoints (root, or CAP_PERFMON, and tracefs), it records it without
// stopping the agent: perf events on the exits of the opens, which the
// kernel filters down to the refused ones (EROFS, EACCES, EPERM) before
// it writes anything, sample the caller's registers and the top of its
// stack into ring buffers that the host reads as they fill. An allowed
// open costs the agent the tracepoint and the filter, no round trip.
//
// The events are opened on a host thread, inherited (attr.inherit), and
// that thread forks the sandbox's init: every process of the sandbox
// inherits them, and nothing else does (the thread stays locked, so the Go
// runtime clones no thread from it, and forks nothing else). An inherited
// event that samples into a ring buffer must be bound to a CPU, so there
// is one per CPU and call, each CPU's events writing into one buffer.
//
// At a refused open's exit the caller's registers still hold its
// arguments (on x86-64 the kernel returns in rax alone): the path's
// address, the flags (openat2: the address of its struct open_how), the
// directory descriptor. The sample's copy of the stack, taken at that
// moment, holds the path when the caller keeps it there (a program's
// arguments, a local buffer): that path is recorded. A path elsewhere (a
// shell's or an interpreter's heap) is not read at all: by the time the
// host could read it, the caller may have reused the memory (a subshell
// that fails to redirect has overwritten the name before it exits, as
// tried), and a record must not name a path the agent never gave. Such a
// write is recorded without its path, saying so, where the refusal says
// it was outside (EROFS: the agent's places are all writable mounts).
// traceSyscalls are the traced opens: each call's exit tracepoint, and
// where its arguments are.
var traceSyscalls = []tracedOpen{
	{name: "open", path: regDI, flags: regSI},
	{name: "creat", path: regDI, flags: -1},
	{name: "openat", path: regSI, flags: regDX},
	{name: "openat2", path: regSI, flags: regDX, how: true},
}

// tracedOpen is an open whose refusals are traced: the registers that hold
// its path and flags (-1: creat's, which are fixed; how: the register
// holds the address of a struct open_how).
type tracedOpen struct {
	name        string
	path, flags int
	how         bool
}

// refusedFilter is the tracepoint filter of the refusals that may be
// writes outside: a read-only mount (EROFS), a file or directory the
// agent may not write (EACCES), an immutable file (EPERM).
const refusedFilter = "ret == -30 || ret == -13 || ret == -1"

// The sampled registers, perf's x86-64 numbering; a sample holds them in
// this order.
const (
	regDX    = 3
	regSI    = 4
	regDI    = 5
	regSP    = 7
	regsMask = 1<<regDX | 1<<regSI | 1<<regDI | 1<<regSP
)

// stackSample is how much of the caller's stack a sample copies, from its
// stack pointer up: enough for a program's arguments and environment (at
// the top of its stack) in the usual case. A sample's size must fit 16
// bits.
const stackSample = 32 << 10

// ringPages is each CPU's buffer, in pages: room for several samples
// while the host reads.
const ringPages = 64

// openTrace is the perf events and buffers of one sandbox.
type openTrace struct {
	events []int // every event, one per CPU and call
	rings  []traceRing
	byID   map[uint16]tracedOpen // by tracepoint id
	lost   uint64                // samples the kernel dropped for a full buffer
	// released lets the thread the events are on close them.
	released chan struct{}
}

// traceRing is one CPU's buffer, as mapped: a control page, then data.
type traceRing struct {
	fd   int
	mem  []byte
	meta *unix.PerfEventMmapPage
	data []byte
}

// tracefsIDs reads the tracepoint ids of the traced opens' exits from a
// tracefs mount of the host's own, detached (the host's mount table does
// not change).
func tracefsIDs() (map[uint16]tracedOpen, error) {
	if runtime.GOARCH != "amd64" {
		return nil, fmt.Errorf("tracing refused opens reads x86-64 registers; this is %s", runtime.GOARCH)
	}
	fs, err := unix.Fsopen("tracefs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("tracefs: %w", err)
	}
	defer unix.Close(fs)
	if err := unix.FsconfigCreate(fs); err != nil {
		return nil, fmt.Errorf("tracefs: %w", err)
	}
	mnt, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOEXEC|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return nil, fmt.Errorf("tracefs: %w", err)
	}
	defer unix.Close(mnt)
	ids := map[uint16]tracedOpen{}
	for _, o := range traceSyscalls {
		b, err := readAt(mnt, "events/syscalls/sys_exit_"+o.name+"/id")
		if errors.Is(err, unix.ENOENT) && o.name != "openat" {
			continue // a kernel without the old calls
		}
		if err != nil {
			return nil, fmt.Errorf("tracefs: %w (a kernel without CONFIG_FTRACE_SYSCALLS?)", err)
		}
		id, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 16)
		if err != nil {
			return nil, fmt.Errorf("tracefs: %s's id %q", o.name, b)
		}
		ids[uint16(id)] = o
	}
	return ids, nil
}

// traceAvailable returns the ids of the traced opens' exits where this
// process may trace them: root or CAP_PERFMON (perf_event_paranoid
// keeps the kernel's events from everyone else), and tracefs.
func traceAvailable() (map[uint16]tracedOpen, error) {
	ids, err := tracefsIDs()
	if err != nil {
		return nil, err
	}
	for id := range ids {
		attr := unix.PerfEventAttr{Type: unix.PERF_TYPE_TRACEPOINT, Size: uint32(unsafe.Sizeof(unix.PerfEventAttr{})), Config: uint64(id)}
		fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			return nil, fmt.Errorf("perf_event_open: %w", err)
		}
		defer unix.Close(fd)
		if err := setFilter(fd, refusedFilter); err != nil {
			return nil, fmt.Errorf("perf event filter: %w", err)
		}
		break
	}
	return ids, nil
}

func readAt(dir int, name string) ([]byte, error) {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	b := make([]byte, 64)
	n, err := f.Read(b)
	return b[:n], err
}

// openTraceOn opens the events on the calling thread, which must be
// locked to it, for the processes it forks from now on.
func openTraceOn(ids map[uint16]tracedOpen) (*openTrace, error) {
	t := &openTrace{byID: ids, released: make(chan struct{})}
	tid := unix.Gettid()
	cpus, err := onlineCPUs()
	if err != nil {
		return nil, err
	}
	for _, cpu := range cpus {
		var ring *traceRing
		for id := range ids {
			attr := unix.PerfEventAttr{
				Type:              unix.PERF_TYPE_TRACEPOINT,
				Size:              uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
				Config:            uint64(id),
				Sample:            1,
				Sample_type:       unix.PERF_SAMPLE_TIME | unix.PERF_SAMPLE_RAW | unix.PERF_SAMPLE_REGS_USER | unix.PERF_SAMPLE_STACK_USER,
				Bits:              unix.PerfBitInherit | unix.PerfBitUseClockID,
				Wakeup:            1, // each refusal wakes the host: a few fill a buffer
				Sample_regs_user:  regsMask,
				Sample_stack_user: stackSample,
				Clockid:           unix.CLOCK_MONOTONIC,
			}
			fd, err := unix.PerfEventOpen(&attr, tid, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
			if err != nil {
				t.close()
				return nil, fmt.Errorf("perf_event_open: %w", err)
			}
			t.events = append(t.events, fd)
			if err := setFilter(fd, refusedFilter); err != nil {
				t.close()
				return nil, fmt.Errorf("perf event filter: %w", err)
			}
			if ring == nil {
				if ring, err = mapRing(fd); err != nil {
					t.close()
					return nil, err
				}
				t.rings = append(t.rings, *ring)
			} else if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_OUTPUT, ring.fd); err != nil {
				t.close()
				return nil, fmt.Errorf("perf event output: %w", err)
			}
		}
	}
	return t, nil
}

// onlineCPUs are the CPUs the kernel runs tasks on, all of them: the
// agent may move its processes to any CPU of its cpuset, whatever this
// process's affinity (runtime.NumCPU counts only that). A CPU brought
// online later is not traced.
func onlineCPUs() ([]int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, err
	}
	var cpus []int
	for _, r := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		first, err1 := strconv.Atoi(lo)
		last, err2 := first, error(nil)
		if isRange {
			last, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("online CPUs %q", b)
		}
		for c := first; c <= last; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

func setFilter(fd int, filter string) error {
	p, err := unix.BytePtrFromString(filter)
	if err != nil {
		return err
	}
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.PERF_EVENT_IOC_SET_FILTER, uintptr(unsafe.Pointer(p)))
	if errno != 0 {
		return errno
	}
	return nil
}

func mapRing(fd int) (*traceRing, error) {
	page := os.Getpagesize()
	mem, err := unix.Mmap(fd, 0, (1+ringPages)*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map perf buffer: %w", err)
	}
	return &traceRing{fd: fd, mem: mem, meta: (*unix.PerfEventMmapPage)(unsafe.Pointer(&mem[0])), data: mem[page:]}, nil
}

func (t *openTrace) close() {
	for _, r := range t.rings {
		unix.Munmap(r.mem)
	}
	for _, fd := range t.events {
		unix.Close(fd)
	}
	t.rings, t.events = nil, nil
}

// refusedOpen is one sample: a refused open at time (CLOCK_MONOTONIC),
// with the caller's registers and the top of its stack.
type refusedOpen struct {
	time      uint64
	open      tracedOpen
	errno     unix.Errno
	regs      [4]uint64 // dx, si, di, sp
	stack     []byte
	stackBase uint64
}

// drain reads every sample in the buffers, oldest first per CPU.
func (t *openTrace) drain(each func(refusedOpen)) {
	for i := range t.rings {
		r := &t.rings[i]
		head := atomic.LoadUint64(&r.meta.Data_head)
		tail := r.meta.Data_tail
		for tail < head {
			hdr := r.read(tail, 8)
			typ := binary.LittleEndian.Uint32(hdr)
			n := uint64(binary.LittleEndian.Uint16(hdr[6:]))
			if n < 8 {
				break
			}
			rec := r.read(tail, int(n))
			switch typ {
			case unix.PERF_RECORD_SAMPLE:
				if s, ok := t.parse(rec[8:]); ok {
					each(s)
				}
			case unix.PERF_RECORD_LOST:
				t.lost += binary.LittleEndian.Uint64(rec[16:])
			}
			tail += n
		}
		atomic.StoreUint64(&r.meta.Data_tail, tail)
	}
}

// read returns n bytes at offset off of the ring, copied when they wrap.
func (r *traceRing) read(off uint64, n int) []byte {
	size := uint64(len(r.data))
	start := off % size
	if start+uint64(n) <= size {
		return r.data[start : start+uint64(n)]
	}
	b := make([]byte, n)
	k := copy(b, r.data[start:])
	copy(b[k:], r.data)
	return b
}

// parse reads a sample of the layout openTraceOn asks for: time, raw,
// user registers, user stack.
func (t *openTrace) parse(b []byte) (refusedOpen, bool) {
	var s refusedOpen
	if len(b) < 12 {
		return s, false
	}
	s.time = binary.LittleEndian.Uint64(b)
	rawSize := int(binary.LittleEndian.Uint32(b[8:]))
	b = b[12:]
	if len(b) < rawSize || rawSize < 24 {
		return s, false
	}
	raw := b[:rawSize]
	b = b[rawSize:]
	o, ok := t.byID[binary.LittleEndian.Uint16(raw)]
	if !ok {
		return s, false
	}
	s.open = o
	s.errno = unix.Errno(-int64(binary.LittleEndian.Uint64(raw[16:])))
	if len(b) < 8 || binary.LittleEndian.Uint64(b) == 0 { // no registers: not a user's call
		return s, false
	}
	b = b[8:]
	if len(b) < 8*len(s.regs) {
		return s, false
	}
	for i := range s.regs {
		s.regs[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	b = b[8*len(s.regs):]
	if len(b) >= 8 {
		n := int(binary.LittleEndian.Uint64(b))
		if len(b) >= 8+n+8 {
			dyn := int(binary.LittleEndian.Uint64(b[8+n:]))
			s.stack, s.stackBase = b[8:8+min(n, dyn)], s.reg(regSP)
		}
	}
	return s, true
}

// reg is the sampled register r.
func (s *refusedOpen) reg(r int) uint64 {
	switch r {
	case regDX:
		return s.regs[0]
	case regSI:
		return s.regs[1]
	case regDI:
		return s.regs[2]
	}
	return s.regs[3]
}

// onStack returns the sample's copy of the caller's stack from addr up,
// or false when addr is not in it.
func (s *refusedOpen) onStack(addr uint64) ([]byte, bool) {
	if addr < s.stackBase || addr-s.stackBase >= uint64(len(s.stack)) {
		return nil, false
	}
	return s.stack[addr-s.stackBase:], true
}

// flags are the open's flags, when the sample holds them.
func (s *refusedOpen) flags() (uint64, bool) {
	switch {
	case s.open.flags < 0:
		return unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC, true
	case s.open.how:
		b, ok := s.onStack(s.reg(s.open.flags))
		if !ok || len(b) < 8 {
			return 0, false
		}
		return binary.LittleEndian.Uint64(b), true
	}
	return s.reg(s.open.flags), true
}

// pathUnread is recorded for a refused write whose path was not on the
// caller's stack.
const pathUnread = "(path not read: not on the caller's stack)"

// outside returns what to record of a refused open: the path it asked to
// write, as the agent gave it, when that is outside the agent's places,
// pathUnread for a write to a read-only mount whose path the sample does
// not hold, when no place of the agent's is one (roWork: /work is), and
// "" for anything else: an open to read, a write inside, a refusal whose
// path the sample does not place. The caller's memory and directories are never read:
// by the time the host reads them they may hold something else (a shell
// frees the name and reuses the memory within microseconds).
func (s *refusedOpen) outside(shared map[string]string, roWork bool) string {
	flags, ok := s.flags()
	if ok && (flags&writeIntent == 0 || flags&unix.O_PATH != 0) || !ok && s.errno != unix.EROFS {
		return ""
	}
	b, ok := s.onStack(s.reg(s.open.path))
	n := bytes.IndexByte(b, 0)
	switch {
	case ok && n >= 0 && strings.HasPrefix(string(b[:n]), "/"):
		if p := path.Clean(string(b[:n])); outside(p, shared) {
			return p
		}
		return ""
	case s.errno != unix.EROFS || roWork:
		return ""
	case ok && n >= 0:
		return string(b[:n]) // relative to a directory the host does not read
	}
	return pathUnread
}

// startTraced opens the events on a locked thread of its own, and calls
// start there, which forks the sandbox's init: the init and everything
// it forks inherit the events. The thread stays locked (so the Go runtime
// forks nothing else from it) until stop, and is the thread the init's
// parent-death signal is tied to. Without events (traceErr), start runs
// all the same.
func startTraced(ids map[uint16]tracedOpen, start func() error) (t *openTrace, traceErr, startErr error) {
	type result struct {
		t                  *openTrace
		traceErr, startErr error
	}
	got := make(chan result)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		t, err := openTraceOn(ids)
		r := result{t: t, traceErr: err, startErr: start()}
		if r.startErr != nil && t != nil {
			t.close()
			r.t = nil
		}
		got <- r
		if r.t != nil {
			<-r.t.released
			r.t.close()
		}
	}()
	r := <-got
	return r.t, r.traceErr, r.startErr
}

// tracer reads a sandbox's buffers as they fill, and records the refused
// opens that would have written outside the agent's places.
type tracer struct {
	trace *openTrace
	rec   *recorder
	ready atomic.Uint64 // CLOCK_MONOTONIC time from which the calls are the agent's; 0: not yet
	// roWork: /work is read-only (a read-only lease), so a write refused
	// for a read-only mount may be inside.
	roWork bool
	mu     sync.Mutex
	stop   int // an eventfd
	done   chan struct{}
}

func newTracer(t *openTrace, rec *recorder, roWork bool) (*tracer, error) {
	stop, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	tr := &tracer{trace: t, rec: rec, roWork: roWork, stop: stop, done: make(chan struct{})}
	go tr.serve()
	return tr, nil
}

// start takes the refusals from now on as the agent's.
func (tr *tracer) start() {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	tr.ready.Store(uint64(ts.Nano()))
}

func (tr *tracer) serve() {
	defer close(tr.done)
	fds := []unix.PollFd{{Fd: int32(tr.stop), Events: unix.POLLIN}}
	for _, r := range tr.trace.rings {
		fds = append(fds, unix.PollFd{Fd: int32(r.fd), Events: unix.POLLIN})
	}
	for {
		if _, err := unix.Poll(fds, -1); err != nil && err != unix.EINTR {
			return
		}
		tr.catchUp()
		if fds[0].Revents != 0 {
			return
		}
	}
}

// catchUp records what the buffers hold.
func (tr *tracer) catchUp() {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	ready := tr.ready.Load()
	tr.trace.drain(func(s refusedOpen) {
		if ready == 0 || s.time < ready {
			return // bwrap's own set-up
		}
		if p := s.outside(tr.rec.shared, tr.roWork); p != "" {
			tr.rec.record("write-outside", s.open.name, p)
		}
	})
}

// finish reads the buffers a last time and lets the forking thread close
// the events; it returns what went unread, if anything did.
func (tr *tracer) finish() string {
	unix.Write(tr.stop, []byte{1, 0, 0, 0, 0, 0, 0, 0})
	<-tr.done
	unix.Close(tr.stop)
	close(tr.trace.released)
	if tr.trace.lost > 0 {
		return fmt.Sprintf("%d refused opens not read: the host fell behind", tr.trace.lost)
	}
	return ""
}
