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
// filter as the environment says (GIT_LEASE_RECORDED=1: with a listener,
// handed over on descriptor 3, as the init does; else with errnos, as
// bwrap does), then becomes sh -c script.
func workload(script string) {
	runtime.LockOSThread() // the filter is this thread's, which execs
	recorded := os.Getenv("GIT_LEASE_RECORDED") == "1"
	prog, err := seccompFilter(nil, recorded)
	if err == nil {
		err = unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
	}
	if err == nil && recorded {
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

// runWorkload runs script under the filter, recorded or not, and returns
// what the recorder recorded.
func runWorkload(tb testing.TB, script string, recorded bool, env ...string) []string {
	got, _ := runWorkloadTimed(tb, script, recorded, env...)
	return got
}

// runWorkloadTimed is runWorkload that also returns the CPU time of the
// workload's processes.
func runWorkloadTimed(tb testing.TB, script string, recorded bool, env ...string) ([]string, time.Duration) {
	host, child, err := socketPair()
	if err != nil {
		tb.Fatal(err)
	}
	defer host.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append([]string{probeEnv + "=workload:" + script, "PATH=/usr/bin:/bin", "GIT_LEASE_RECORDED=0"}, env...)
	if recorded {
		cmd.Env = append(cmd.Env, "GIT_LEASE_RECORDED=1")
	}
	cmd.ExtraFiles = []*os.File{child}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	child.Close()
	var rec *recorder
	if recorded {
		if rec, err = receiveListener(host); err != nil {
			tb.Fatal(err)
		}
		rec.enforce.Store(true)
	}
	if err := cmd.Wait(); err != nil {
		tb.Fatalf("workload: %v", err)
	}
	var got []string
	if rec != nil {
		for _, a := range rec.finish().Attempts {
			got = append(got, a.Rule+" "+a.Syscall+" "+a.Call)
		}
	}
	return got, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// BenchmarkEscapeRecording is a build-like workload (10,000 files written,
// then a small Go module compiled, its package anew each time, against a
// warm build cache) under the sandbox's filter without recording (errnos,
// as bwrap installs it) and with (user notifications for refused and
// write-class calls, served by the recorder), interleaved so that both
// meet the machine in the same state. It reports each one's wall time and
// CPU time (the workload's and this process's, where the recorder runs)
// per run, and the overheads:
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
	// Each run compiles a package of its own: one the other run compiled
	// already would come from the cache.
	script := func(i int, recorded bool) string {
		if recorded {
			i = -i - 2
		}
		out := filepath.Join(dir, fmt.Sprintf("run%d", i))
		return fmt.Sprintf(`mkdir %s && cd %s && i=0; while [ $i -lt 10000 ]; do echo $i > f$i; i=$((i+1)); done
printf 'package main\n\nimport "fmt"\n\nconst n = %d\n\nfunc main() { fmt.Println(n) }\n' > %s/main.go && cd %s && go build -o %s/m .`, out, out, i, mod, mod, dir)
	}
	runWorkload(b, script(-1, false), false, env...) // the standard library, in the cache
	var wall, cpu [2]time.Duration
	for i := 0; b.Loop(); i++ {
		for _, recorded := range []bool{i%2 == 1, i%2 == 0} { // each goes first in turn
			r := 0
			if recorded {
				r = 1
			}
			start, self := time.Now(), processCPU()
			_, child := runWorkloadTimed(b, script(i, recorded), recorded, env...)
			wall[r] += time.Since(start)
			cpu[r] += child + processCPU() - self
		}
	}
	n := float64(b.N)
	b.ReportMetric(wall[0].Seconds()/n, "errno-wall-s/op")
	b.ReportMetric(wall[1].Seconds()/n, "recorded-wall-s/op")
	b.ReportMetric(100*(wall[1].Seconds()/wall[0].Seconds()-1), "wall-overhead-%")
	b.ReportMetric(cpu[0].Seconds()/n, "errno-cpu-s/op")
	b.ReportMetric(cpu[1].Seconds()/n, "recorded-cpu-s/op")
	b.ReportMetric(100*(cpu[1].Seconds()/cpu[0].Seconds()-1), "cpu-overhead-%")
}

// processCPU is this process's CPU time so far.
func processCPU() time.Duration {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
