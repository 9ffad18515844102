package bwrap

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// workload runs as the probe (see TestMain): it installs the sandbox's
// filter as the environment says (GIT_LEASE_RECORDED=calls: with a
// listener, handed over on descriptor 3, as the init does; =opens: the
// same, with the opens that ask to write; else with errnos, as bwrap
// does), then becomes sh -c script.
func workload(script string) {
	runtime.LockOSThread() // the filter is this thread's, which execs
	recording := recording(os.Getenv("GIT_LEASE_RECORDED"))
	prog, err := seccompFilter(nil, recording != errnos, recording == opens)
	if err == nil {
		err = unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
	}
	if err == nil && recording != errnos {
		var listener int
		if listener, err = installRecorded(prog); err == nil {
			err = sendListener(3, listener, nil)
		}
	} else if err == nil {
		fprog := unix.SockFprog{Len: uint16(len(prog) / 8), Filter: (*unix.SockFilter)(unsafe.Pointer(&prog[0]))}
		_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog)))
		err = errnoOrNil(errno)
	}
	if err == nil {
		err = syscall.Exec("/bin/sh", []string{"sh", "-c", script}, os.Environ())
	}
	fmt.Fprintln(os.Stderr, err)
	os.Exit(2)
}

// recording is how a workload's filter is served.
type recording string

const (
	errnos recording = "errnos" // the kernel answers refused calls; nothing is recorded
	calls  recording = "calls"  // as a lease records by default
	opens  recording = "opens"  // and the opens that ask to write ([bwrap] record_opens)
	traced recording = "traced" // calls, and the refused opens traced (as a lease records as root)
)

// runWorkload runs script under the filter, served as rec says, and
// returns what the recorder recorded.
func runWorkload(tb testing.TB, script string, rec recording, env ...string) []string {
	got, _ := runWorkloadTimed(tb, script, rec, env...)
	return got
}

// runWorkloadTimed is runWorkload that also returns the CPU time of the
// workload's processes.
func runWorkloadTimed(tb testing.TB, script string, rec recording, env ...string) ([]string, time.Duration) {
	host, child, err := socketPair()
	if err != nil {
		tb.Fatal(err)
	}
	defer host.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append([]string{probeEnv + "=workload:" + script, "PATH=/usr/bin:/bin", "GIT_LEASE_RECORDED=" + string(rec)}, env...)
	cmd.ExtraFiles = []*os.File{child}
	cmd.Stderr = os.Stderr
	var trace *openTrace
	if rec == traced {
		ids, traceErr := traceAvailable()
		if traceErr != nil {
			tb.Skipf("no tracing here: %v", traceErr)
		}
		if trace, traceErr, err = startTraced(ids, cmd.Start); traceErr != nil {
			tb.Fatal(traceErr)
		}
	} else {
		err = cmd.Start()
	}
	if err != nil {
		tb.Fatal(err)
	}
	child.Close()
	var r *recorder
	if rec != errnos {
		if r, err = receiveListener(host); err != nil {
			tb.Fatal(err)
		}
		if trace != nil {
			if r.trace, err = newTracer(trace, r, false); err != nil {
				tb.Fatal(err)
			}
			r.trace.start()
		}
		r.enforce.Store(true)
	}
	if err := cmd.Wait(); err != nil {
		tb.Fatalf("workload: %v", err)
	}
	var got []string
	if r != nil {
		for _, a := range r.finish().Attempts {
			got = append(got, a.Rule+" "+a.Syscall+" "+a.Call)
		}
	}
	return got, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// BenchmarkEscapeRecording is a build-like workload (10,000 files written,
// then a small Go module compiled, its package anew each time, against a
// warm build cache) under the sandbox's filter without recording (errnos,
// as bwrap installs it), with recording of the calls alone (user
// notifications for refused and write-class calls, served by the
// recorder: a lease as a normal user), with the opens that ask to write
// as well ([bwrap] record_opens), and with the calls and the refused
// opens traced (a lease as root), interleaved so that all meet the
// machine in the same state. It reports each one's wall time and CPU time (the workload's and
// this process's, where the recorder runs) per run, and the overheads:
//
//	go test -run '^$' -bench EscapeRecording -benchtime 5x ./sandbox/bwrap/
func BenchmarkEscapeRecording(b *testing.B) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		b.Skip("no go on PATH")
	}
	dir := b.TempDir()
	mod := filepath.Join(dir, "mod")
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	must(os.MkdirAll(mod, 0o755))
	must(os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module m\n\ngo 1.21\n"), 0o644))
	env := []string{"GOCACHE=" + filepath.Join(dir, "cache"), "GOTOOLCHAIN=local", "GOFLAGS=", "HOME=" + dir, "GOPATH=" + filepath.Join(dir, "gopath"),
		"PATH=" + filepath.Dir(goBin) + ":/usr/bin:/bin"}
	// Each run compiles a package of its own: one another run compiled
	// already would come from the cache.
	run := 0
	script := func() string {
		run++
		out := filepath.Join(dir, fmt.Sprintf("run%d", run))
		return fmt.Sprintf(`mkdir %s && cd %s && i=0; while [ $i -lt 10000 ]; do echo $i > f$i; i=$((i+1)); done
printf 'package main\n\nimport "fmt"\n\nconst n = %d\n\nfunc main() { fmt.Println(n) }\n' > %s/main.go && cd %s && go build -o %s/m .`, out, out, run, mod, mod, dir)
	}
	runWorkload(b, script(), errnos, env...) // the standard library, in the cache
	modes := []recording{errnos, calls, opens, traced}
	var wall, cpu [4]time.Duration
	for i := 0; b.Loop(); i++ {
		for j := range modes {
			m := (i + j) % len(modes) // each goes first in turn
			start, self := time.Now(), processCPU()
			_, child := runWorkloadTimed(b, script(), modes[m], env...)
			wall[m] += time.Since(start)
			cpu[m] += child + processCPU() - self
		}
	}
	n := float64(b.N)
	for m, mode := range modes {
		b.ReportMetric(wall[m].Seconds()/n, string(mode)+"-wall-s/op")
		b.ReportMetric(cpu[m].Seconds()/n, string(mode)+"-cpu-s/op")
		if m > 0 {
			b.ReportMetric(100*(cpu[m].Seconds()/cpu[0].Seconds()-1), string(mode)+"-cpu-overhead-%")
			b.ReportMetric(100*(wall[m].Seconds()/wall[0].Seconds()-1), string(mode)+"-wall-overhead-%")
		}
	}
}

// processCPU is this process's CPU time so far.
func processCPU() time.Duration {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
