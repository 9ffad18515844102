// Command bench measures a sandboxed lease against plain git doing the same
// work, side by side in one run, on generated repositories of 1k, 10k and
// 100k files:
//
//   - git:         git worktree add, edit 10 files, git add -A && git commit
//   - lease cold:  git lease start (first lease ever: the base is exported
//     whole), the agent edits the same 10 files, up to review
//   - lease moved: the same after main moved by a commit of 10 other files
//     since the last export (the base is a layer of what changed)
//   - lease warm:  the same on a base another lease already exported
//
// It reports the median wall time of each, its ratio to git, the sandbox
// start latency (from invoking git lease to the agent's first instruction),
// the peak resident memory of the largest process, and the disk that the
// exported bases and layers take.
//
// Then a project's own test run (go vet and go test of a small real
// module, BurntSushi/toml from this module's dependencies) on the host
// with a warm build cache, inside a lease with a warm cache layer (git
// lease cache warm), and inside a lease with none, interleaved.
//
//	go run ./scripts/bench [-sizes 1000,10000,100000] [-runs 3] [-testrun=false]
//
// With -providers it instead compares the agentfs provider with the overlay
// provider (see providers.go): start, 10,000 file writes, compiling a small
// Go module, and collection. With -export it compares a cold export with
// git worktree add of the same tree (see export.go).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

var (
	sizes     = flag.String("sizes", "1000,10000,100000", "repository sizes in files (none: only the test run)")
	runs      = flag.Int("runs", 3, "runs per measurement (the median is reported)")
	testRun   = flag.Bool("testrun", true, "measure a Go module's test run on the host and in leases")
	providers = flag.Bool("providers", false, "compare the agentfs provider with the overlay provider instead")
	export    = flag.Bool("export", false, "compare a cold export with git worktree add of the same tree instead")
	// exportInto makes the process the helper that -export times.
	exportDir = flag.String("export-into", "", "")
)

func main() {
	flag.Parse()
	log.SetFlags(0)
	if *exportDir != "" {
		exportInto(*exportDir)
		return
	}
	tmp, err := os.MkdirTemp("", "git-lease-bench-")
	check(err)
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "bin")
	check(os.Mkdir(bin, 0o755))
	env := []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "GIT_CONFIG_GLOBAL=" + filepath.Join(tmp, "gitconfig"),
		"XDG_CONFIG_HOME=" + filepath.Join(tmp, "config")}
	check(os.WriteFile(filepath.Join(tmp, "gitconfig"), []byte("[user]\n\tname = Bench\n\temail = bench@example.com\n"), 0o644))
	if *export {
		benchExport(tmp, env)
		return
	}
	run("", nil, "go", "build", "-o", filepath.Join(bin, "git-lease"), "./cmd/git-lease")
	if *providers {
		benchProviders(tmp, env)
		return
	}

	fmt.Printf("%-8s %-11s %10s %10s %8s %14s %12s\n", "files", "what", "median", "vs git", "runs", "start→agent", "peak RSS")
	for _, s := range strings.FieldsFunc(*sizes, func(r rune) bool { return r == ',' }) {
		n, err := strconv.Atoi(s)
		check(err)
		repo := generate(tmp, n, env)
		// Interleaved, so that each round of the four meets the machine
		// (page cache, disk, other load) in the same state.
		var gits, colds, moveds, warms []sample
		// What a round deletes is deleted at its end, not before a
		// measurement: this machine's disk creates files slowly next to
		// ones just deleted (see README), which would burden whichever
		// measurement came next.
		for i := 0; i < *runs; i++ {
			g, wt := gitBaseline(repo, i, env)
			gits = append(gits, g)
			// The first lease ever: no exported base to start from.
			bases := filepath.Join(repo, ".git", "lease", "bases")
			aside := bases + fmt.Sprintf("-%d", i)
			if err := os.Rename(bases, aside); err != nil && !os.IsNotExist(err) {
				log.Fatal(err)
			}
			colds = append(colds, lease(repo, env))
			moveMain(repo, i, env)
			moveds = append(moveds, lease(repo, env))
			warms = append(warms, lease(repo, env))
			run(repo, env, "git", "worktree", "remove", "--force", wt)
			removeAll(aside)
		}
		git := summarize(gits)
		for _, row := range []struct {
			what string
			m    sample
		}{{"git", git}, {"lease cold", summarize(colds)}, {"lease moved", summarize(moveds)}, {"lease warm", summarize(warms)}} {
			ratio, start := "", ""
			if row.what != "git" {
				ratio = fmt.Sprintf("%.2fx", row.m.wall.Seconds()/git.wall.Seconds())
				start = row.m.start.Round(time.Millisecond).String()
			}
			fmt.Printf("%-8d %-11s %10s %10s %8d %14s %9.1f MiB\n", n, row.what, row.m.wall.Round(time.Millisecond), ratio, *runs, start, float64(row.m.rss)/(1<<20))
		}
		whole, layers, count := basesDisk(repo)
		fmt.Printf("%-8d disk: whole base %.1f MiB, %d layers %.1f MiB in all\n", n, float64(whole)/(1<<20), count, float64(layers)/(1<<20))
	}
	if *testRun {
		benchTestRun(tmp, env)
	}
}

// goTest is the project's test run: what a person or an agent runs after
// an edit. -count=1 runs the tests whatever results a cache holds.
const goTest = "go vet ./... && go test -count=1 ./..."

// benchTestRun measures goTest on a copy of BurntSushi/toml (no
// dependencies, 2k tests): on the host with a build cache warmed by one
// run, in a lease whose cache layer git lease cache warm made with the
// same command, and in a lease without caches. Each reports the test run's
// own wall time (in a lease, as the agent timed it); a lease's start and
// collection come on top, and are the rows above.
func benchTestRun(tmp string, env []string) {
	goBin, err := exec.LookPath("go")
	check(err)
	goBin, err = filepath.EvalSymlinks(goBin)
	check(err)
	if !strings.HasPrefix(goBin, "/usr/") && !strings.HasPrefix(goBin, "/opt/") {
		log.Fatalf("go is at %s, which a lease does not see (only /usr and /opt): install Go under /usr/local or /opt", goBin)
	}
	src, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/BurntSushi/toml").Output()
	check(err)
	repo := filepath.Join(tmp, "toml")
	run("", env, "cp", "-r", strings.TrimSpace(string(src)), repo)
	run(repo, env, "sh", "-c", "chmod -R u+w . && git init -q -b main && git add -A && git commit -q -m toml")
	// The whole test run, with Go's own toolchain and nothing fetched.
	script := fmt.Sprintf("export PATH=%s:$PATH GOTOOLCHAIN=local GOFLAGS= GOPROXY=off; %s", filepath.Dir(goBin), goTest)
	hostEnv := append(env, "GOCACHE="+filepath.Join(tmp, "host-gocache"), "GOMODCACHE="+filepath.Join(tmp, "host-gomod"))
	run(repo, hostEnv, "sh", "-c", script) // warms the host's cache
	cacheEnv := append(env, "XDG_CONFIG_HOME="+filepath.Join(tmp, "config-caches"))
	check(os.MkdirAll(filepath.Join(tmp, "config-caches", "git-lease"), 0o755))
	policy := fmt.Sprintf("[caches.go]\npaths = [\"GOCACHE:/cache/go-build\", \"GOMODCACHE:/cache/gomod\"]\nwarm = %q\n", script)
	check(os.WriteFile(filepath.Join(tmp, "config-caches", "git-lease", "policy.toml"), []byte(policy), 0o644))
	warm := timed(repo, cacheEnv, "git", "lease", "cache", "warm")
	var hosts, cached, bare []testRunSample
	for i := 0; i < *runs; i++ {
		hosts = append(hosts, testRunIn(repo, hostEnv, script))
		cached = append(cached, testRunIn(repo, cacheEnv, script, "git", "lease", "start", "--"))
		if i == 0 { // once: it takes minutes, and shows what the cache saves
			bare = append(bare, testRunIn(repo, env, script, "git", "lease", "start", "--"))
		}
	}
	host := summarizeTestRuns(hosts)
	fmt.Printf("\n%-28s %10s %10s %10s %10s %8s %14s\n", "test run ("+goTest+")", "median", "vs host", "CPU", "vs host", "runs", "start→agent")
	for _, row := range []struct {
		what string
		m    testRunSample
		runs int
	}{{"host, warm cache", host, *runs}, {"lease, warm cache layer", summarizeTestRuns(cached), *runs}, {"lease, no cache", summarizeTestRuns(bare), 1}} {
		ratio, cpuRatio, start := "", "", ""
		if row.what != "host, warm cache" {
			ratio = fmt.Sprintf("%.2fx", row.m.wall.Seconds()/host.wall.Seconds())
			cpuRatio = fmt.Sprintf("%.2fx", row.m.cpu.Seconds()/host.cpu.Seconds())
			start = row.m.start.Round(time.Millisecond).String()
		}
		fmt.Printf("%-28s %10s %10s %10s %10s %8d %14s\n", row.what, row.m.wall.Round(time.Millisecond), ratio, row.m.cpu.Round(time.Millisecond), cpuRatio, row.runs, start)
	}
	fmt.Printf("cache warm-up: %s (once, in a lease on the base)\n", warm.wall.Round(time.Millisecond))
}

// testRunSample is one test run: its wall time and CPU time (user and
// system, of all its processes) as the shell that ran it counted them,
// and, in a lease, the start latency.
type testRunSample struct {
	wall, cpu, start time.Duration
}

// testRunIn runs script under sh, on the host or, with a prefix such as
// git lease start --, in a lease, and returns what the shell around it
// measured.
func testRunIn(repo string, env []string, script string, prefix ...string) testRunSample {
	shell := fmt.Sprintf("A=$(date +%%s%%N); echo T=$A; O=$(mktemp); if ( %s ) >$O 2>&1; then echo D=$(( $(date +%%s%%N) - A )); times; else cat $O; fi", script)
	argv := append(prefix, "sh", "-c", shell)
	began := time.Now()
	out := timed(repo, env, argv[0], argv[1:]...).out
	ns := func(key string) int64 {
		i := bytes.Index(out, []byte(key))
		if i < 0 {
			log.Fatalf("the test run failed:\n%s", out)
		}
		n, _ := strconv.ParseInt(string(bytes.Fields(out[i+len(key):])[0]), 10, 64)
		return n
	}
	wall, started := ns("D="), ns("T=")
	// After D=, times prints the shell's own user and system time, then
	// its children's, as "0m1.234s 0m0.567s" (git lease start prints the
	// lease's ID after them).
	after := strings.Split(string(out[bytes.Index(out, []byte("D=")):]), "\n")
	var cpu time.Duration
	for _, f := range strings.Fields(after[2]) {
		d, err := time.ParseDuration(f)
		check(err)
		cpu += d
	}
	return testRunSample{wall: time.Duration(wall), cpu: cpu, start: time.Unix(0, started).Sub(began)}
}

func summarizeTestRuns(samples []testRunSample) testRunSample {
	var walls, cpus, starts []time.Duration
	for _, s := range samples {
		walls, cpus, starts = append(walls, s.wall), append(cpus, s.cpu), append(starts, s.start)
	}
	return testRunSample{median(walls), median(cpus), median(starts)}
}

// moveMain commits a change of 10 files (not the ones the agents edit) on
// main, as a teammate's commit would, so that the next lease's base is one
// no lease has exported.
func moveMain(repo string, round int, env []string) {
	n := countFiles(repo)
	var moved []string
	for i := 0; i < 10; i++ {
		k := i*n/10 + 1
		moved = append(moved, fmt.Sprintf("d%04d/f%06d.txt", k/100, k))
	}
	script := fmt.Sprintf("for f in %s; do echo move %d >> $f; done && git commit -q -am move", strings.Join(moved, " "), round)
	run(repo, env, "sh", "-c", script)
}

// basesDisk is what the exported bases take on disk: the whole exports,
// and the layers, with their count.
func basesDisk(repo string) (whole, layers int64, count int) {
	dirs, _ := filepath.Glob(filepath.Join(repo, ".git", "lease", "bases", "*"))
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "layer")); err == nil {
			layers += du(d)
			count++
		} else {
			whole += du(d)
		}
	}
	return whole, layers, count
}

// du is the disk a tree takes: allocated blocks, at least one per entry.
func du(dir string) int64 {
	var total int64
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil {
			st := info.Sys().(*syscall.Stat_t)
			total += max(st.Blocks*512, 4096)
		}
		return nil
	})
	return total
}

type sample struct {
	wall, start time.Duration
	rss         int64
}

// summarize returns the median wall time and start latency, and the
// largest peak RSS.
func summarize(samples []sample) sample {
	var walls, starts []time.Duration
	var rss int64
	for _, s := range samples {
		walls, starts = append(walls, s.wall), append(starts, s.start)
		rss = max(rss, s.rss)
	}
	return sample{median(walls), median(starts), rss}
}

func median(d []time.Duration) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}

// edited are the 10 files both sides edit.
func edited(n int) []string {
	var out []string
	for i := 0; i < 10; i++ {
		k := i * n / 10
		out = append(out, fmt.Sprintf("d%04d/f%06d.txt", k/100, k))
	}
	return out
}

// generate makes a repository of n files (100 per directory, about 100
// bytes each) with git fast-import, and checks it out.
func generate(tmp string, n int, env []string) string {
	repo := filepath.Join(tmp, fmt.Sprintf("repo-%d", n))
	run("", env, "git", "init", "-q", "-b", "main", repo)
	var stream bytes.Buffer
	stream.WriteString("commit refs/heads/main\ncommitter Bench <bench@example.com> 1700000000 +0000\ndata 4\nbase\n")
	for i := 0; i < n; i++ {
		content := fmt.Sprintf("file %d\n%s\n", i, strings.Repeat("lorem ipsum ", 7))
		fmt.Fprintf(&stream, "M 100644 inline d%04d/f%06d.txt\ndata %d\n%s\n", i/100, i, len(content), content)
	}
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir, cmd.Env, cmd.Stdin = repo, append(os.Environ(), env...), &stream
	out, err := cmd.CombinedOutput()
	if err != nil {
		log.Fatalf("fast-import: %v\n%s", err, out)
	}
	run(repo, env, "git", "checkout", "-q", "-f", "main")
	return repo
}

// gitBaseline does the work with plain git and returns its measure and the
// worktree it made.
func gitBaseline(repo string, i int, env []string) (sample, string) {
	wt := filepath.Join(filepath.Dir(repo), fmt.Sprintf("wt-%s-%d", filepath.Base(repo), i))
	script := fmt.Sprintf("git worktree add -q -b bench-%d %s main && cd %s && for f in %s; do echo edit >> $f; done && git add -A && git commit -q -m edit",
		i, wt, wt, strings.Join(edited(countFiles(repo)), " "))
	return timed(repo, env, "sh", "-c", script).sample, wt
}

func lease(repo string, env []string) sample {
	agent := fmt.Sprintf("echo T=$(date +%%s%%N); for f in %s; do echo edit >> $f; done", strings.Join(edited(countFiles(repo)), " "))
	began := time.Now()
	s := timed(repo, env, "git", "lease", "start", "--", "sh", "-c", agent)
	i := bytes.Index(s.out, []byte("T="))
	if i < 0 {
		log.Fatalf("the agent did not report its start:\n%s", s.out)
	}
	ns, _ := strconv.ParseInt(string(bytes.Fields(s.out[i+2:])[0]), 10, 64)
	s.start = time.Unix(0, ns).Sub(began)
	return s.sample
}

type timedRun struct {
	sample
	out []byte
	ru  *syscall.Rusage
}

// timed runs a command and reports its wall time and the peak RSS of its
// largest process (its own or a descendant's).
func timed(dir string, env []string, name string, args ...string) timedRun {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	began := time.Now()
	out, err := cmd.CombinedOutput()
	wall := time.Since(began)
	if err != nil {
		log.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return timedRun{sample{wall: wall, rss: ru.Maxrss * 1024}, out, ru}
}

var files = map[string]int{}

func countFiles(repo string) int {
	if n, ok := files[repo]; ok {
		return n
	}
	n, _ := strconv.Atoi(strings.TrimPrefix(filepath.Base(repo), "repo-"))
	files[repo] = n
	return n
}

// removeAll removes a tree whose directories may be read-only.
func removeAll(dir string) {
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	os.RemoveAll(dir)
}

func run(dir string, env []string, name string, args ...string) {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		log.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
