package main

import (
	"bytes"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// The agents of the provider comparison (-providers). Each prints T= and
// E= (nanosecond clock) when its work begins and ends, so that the start
// (invocation to T), the agent's own time (T to E) and the collection (E to
// the lease in review) are told apart.
var providerWorkloads = []struct{ name, agent string }{
	{"start+collect", "echo T=$(date +%s%N); echo E=$(date +%s%N)"},
	{"10k writes", `echo T=$(date +%s%N); mkdir gen; i=0; while [ $i -lt 10000 ]; do echo $i > gen/f$i; i=$((i+1)); done; echo E=$(date +%s%N)`},
	{"go build", "echo T=$(date +%s%N); cd app && CGO_ENABLED=0 GOTOOLCHAIN=local GOCACHE=/tmp/gocache GOPATH=/tmp/gopath " +
		"/usr/local/go/bin/go build -o /tmp/app . && echo E=$(date +%s%N)"},
}

// benchProviders runs each workload on the overlay provider (bwrap) and on
// agentfs, interleaved, on a repository of 1,000 files with a small Go
// module, and reports the medians.
func benchProviders(tmp string, env []string) {
	repo := generate(tmp, 1000, env)
	app := filepath.Join(repo, "app")
	check(os.MkdirAll(app, 0o755))
	check(os.WriteFile(filepath.Join(app, "go.mod"), []byte("module app\n\ngo 1.22\n"), 0o644))
	for i := 0; i < 20; i++ {
		src := fmt.Sprintf("package main\n\nimport \"strings\"\n\nfunc f%d(s string) string { return strings.Repeat(s, %d) }\n", i, i)
		check(os.WriteFile(filepath.Join(app, fmt.Sprintf("f%d.go", i)), []byte(src), 0o644))
	}
	check(os.WriteFile(filepath.Join(app, "main.go"), []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(f1(\"x\")) }\n"), 0o644))
	run(repo, env, "git", "add", "app")
	run(repo, env, "git", "commit", "-q", "-m", "a Go module")
	policy := filepath.Join(tmp, "config", "git-lease", "policy.toml")
	check(os.MkdirAll(filepath.Dir(policy), 0o755))
	type times struct{ start, agent, collect, wall []time.Duration }
	results := map[string]*times{}
	providers := []string{"bwrap", "agentfs"}
	for round := 0; round < *runs; round++ {
		for _, w := range providerWorkloads {
			for _, p := range providers {
				check(os.WriteFile(policy, []byte("provider = \""+p+"\"\n"), 0o644))
				began := time.Now()
				s := timed(repo, env, "git", "lease", "start", "--", "sh", "-c", w.agent)
				ended := began.Add(s.wall)
				t, e := stamp(s.out, "T="), stamp(s.out, "E=")
				k := p + "\x00" + w.name
				if results[k] == nil {
					results[k] = &times{}
				}
				r := results[k]
				r.start, r.agent = append(r.start, t.Sub(began)), append(r.agent, e.Sub(t))
				r.collect, r.wall = append(r.collect, ended.Sub(e)), append(r.wall, s.wall)
			}
		}
	}
	fmt.Printf("%-14s %-8s %10s %10s %12s %10s   (medians of %d; 1,000-file repository)\n", "workload", "provider", "start", "agent", "collection", "total", *runs)
	for _, w := range providerWorkloads {
		for _, p := range providers {
			r := results[p+"\x00"+w.name]
			ms := func(d []time.Duration) string { return median(d).Round(time.Millisecond).String() }
			fmt.Printf("%-14s %-8s %10s %10s %12s %10s\n", w.name, p, ms(r.start), ms(r.agent), ms(r.collect), ms(r.wall))
		}
	}
}

// stamp reads the agent's nanosecond clock after key in its output.
func stamp(out []byte, key string) time.Time {
	i := bytes.Index(out, []byte(key))
	if i < 0 {
		log.Fatalf("the agent did not report %s:\n%s", key, out)
	}
	ns, err := strconv.ParseInt(string(bytes.Fields(out[i+len(key):])[0]), 10, 64)
	check(err)
	return time.Unix(0, ns)
}
