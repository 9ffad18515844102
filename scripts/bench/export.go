package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/git-lease/git-lease/refs"
)

// benchExport compares a cold export, the first lease's cost on a base no
// lease has exported (refs.ExportTree into an empty directory, in a
// process of its own as git lease start's is), with git worktree add of
// the same tree, interleaved round by round: wall time and CPU time (user
// and system, of the process and its children).
func benchExport(tmp string, env []string) {
	self, err := os.Executable()
	check(err)
	fmt.Printf("%-8s %-18s %10s %10s %10s %10s\n", "files", "what", "wall", "vs git", "CPU", "vs git")
	for _, s := range strings.FieldsFunc(*sizes, func(r rune) bool { return r == ',' }) {
		n, err := strconv.Atoi(s)
		check(err)
		repo := generate(tmp, n, env)
		var gits, exports []cpuSample
		for i := 0; i < *runs; i++ {
			wt := filepath.Join(tmp, fmt.Sprintf("wt-%d-%d", n, i))
			exp := filepath.Join(tmp, fmt.Sprintf("export-%d-%d", n, i))
			gits = append(gits, cpuTimed(repo, env, "git", "worktree", "add", "-q", "--detach", wt, "main"))
			exports = append(exports, cpuTimed(repo, env, self, "-export-into", exp))
			// Deleted at the end of the round, not before a measurement
			// (see main).
			run(repo, env, "git", "worktree", "remove", "--force", wt)
			removeAll(exp)
		}
		g, e := medianCPU(gits), medianCPU(exports)
		fmt.Printf("%-8d %-18s %10s %10s %10s %10s\n", n, "git worktree add", g.wall.Round(time.Millisecond), "", g.cpu.Round(time.Millisecond), "")
		fmt.Printf("%-8d %-18s %10s %9.2fx %10s %9.2fx\n", n, "lease cold export", e.wall.Round(time.Millisecond), e.wall.Seconds()/g.wall.Seconds(), e.cpu.Round(time.Millisecond), e.cpu.Seconds()/g.cpu.Seconds())
	}
}

// exportInto exports HEAD's tree of the repository in the working
// directory into dir, as a cold lease start does: the helper process that
// benchExport times.
func exportInto(dir string) {
	repo, err := refs.Open(".")
	check(err)
	head, err := repo.ResolveCommit("HEAD")
	check(err)
	commit, err := repo.Commit(head)
	check(err)
	check(os.Mkdir(dir, 0o755))
	check(repo.ExportTree(commit.TreeHash, dir))
}

type cpuSample struct{ wall, cpu time.Duration }

// cpuTimed runs a command and reports its wall time and the CPU time of it
// and its children.
func cpuTimed(dir string, env []string, name string, args ...string) cpuSample {
	s := timed(dir, env, name, args...)
	ru := s.ru
	cpu := time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime))
	return cpuSample{s.wall, cpu}
}

func medianCPU(samples []cpuSample) cpuSample {
	var walls, cpus []time.Duration
	for _, s := range samples {
		walls, cpus = append(walls, s.wall), append(cpus, s.cpu)
	}
	return cpuSample{median(walls), median(cpus)}
}
