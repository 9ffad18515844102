#!/usr/bin/env bash
# Runs git-lease's tests: gofmt, vet, every unit and transcript test, then
# every fuzz target briefly. Installs what the tests run for real when it is
# missing (Debian packages): bubblewrap for the sandboxes, e2fsprogs
# (mkfs.ext4) for root's disk images, which bound a lease's disk, openssh-client
# (ssh-keygen, ssh-agent) for the signing interoperability tests, curl for
# the network attack tests (they skip without it), git-lfs for the test that
# a result never runs a real filter driver (configured only in the test's own
# repository; it skips without it), jq for scripts/acceptance.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/debian-packages.sh
need_packages bwrap=bubblewrap mkfs.ext4=e2fsprogs ssh-keygen=openssh-client curl=curl git-lfs=git-lfs jq=jq
test -z "$(gofmt -l $(git ls-files '*.go'))" || { echo "gofmt would change:"; gofmt -l $(git ls-files '*.go'); exit 1; }
go mod tidy -diff || { echo 'go.mod or go.sum is not tidy: run go mod tidy'; exit 1; }
go vet ./...
# The AgentFS tests read databases written by AgentFS's npm SDK (its own
# native engine, as the CLI's); they skip without node.
if command -v npm >/dev/null; then
	export AGENTFS_SDK_MODULES="${XDG_CACHE_HOME:-$HOME/.cache}/git-lease/agentfs-sdk-0.6.4/node_modules"
	[ -d "$AGENTFS_SDK_MODULES/agentfs-sdk" ] ||
		npm install --no-audit --no-fund --prefix "$(dirname "$AGENTFS_SDK_MODULES")" agentfs-sdk@0.6.4
	# Claude Code and Codex, at the versions README's agents table names,
	# for the tests that run their presets for real
	# (TestSandboxRealAgentCompletesATurn runs a turn of each in a lease);
	# they skip without them. Installed under the home, as npm -g with a
	# user prefix would, so a lease binds only their packages. Claude
	# Code's postinstall puts its native binary in place (npm 11 warns of
	# install scripts a global install does not list).
	agents="${XDG_CACHE_HOME:-$HOME/.cache}/git-lease/agents-claude-code-2.1.197-codex-0.171.0"
	[ -x "$agents/bin/claude" ] && [ -x "$agents/bin/codex" ] ||
		npm install -g --no-audit --no-fund --allow-scripts=@anthropic-ai/claude-code --prefix "$agents" @anthropic-ai/claude-code@2.1.197 @openai/codex@0.171.0
	export REAL_AGENTS_BIN="$agents/bin"
fi
# The tests run under scripts/leftovers, a child subreaper: any process
# they started (a runner, a sandbox, a stand-in) that outlives them fails
# the run, named.
go run ./scripts/leftovers -- go test -count=1 -timeout 15m ./...
# The concurrency tests again under the race detector: goroutines sharing
# one Repo (refs, gitlease), and concurrent git-lease processes, whose
# binary the tests then build with -race too (cmd/git-lease). Only those,
# since -race makes everything slower.
go run ./scripts/leftovers -- go test -race -count=1 -timeout 10m -run '^(TestOneRepoServesManyGoroutines|TestConcurrent.*)$' ./refs/ ./gitlease/ ./cmd/git-lease/
# Every fuzz target, briefly. The budget is a count of inputs, not a time:
# Go 1.26's fuzz coordinator can report its own -fuzztime deadline as a
# failure ("context deadline exceeded", go.dev/issue/75804) on a busy
# machine. Run longer by hand: FUZZTIME=5000000x.
for pkg in $(go list ./...); do
	for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		out=$(go test -run '^$' -fuzz "^${target}\$" -fuzztime "${FUZZTIME:-50000x}" "$pkg" 2>&1) ||
			{ echo "$out"; echo "fuzzing $pkg $target failed"; exit 1; }
	done
done
echo "fuzz targets ran ${FUZZTIME:-50000x} each"
