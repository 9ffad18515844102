#!/usr/bin/env bash
# The spec's acceptance, end to end, as a person runs it (and as CI does,
# through TestAcceptance in cmd/git-lease):
#
#   two writing agents from one base, each with its own branch, review
#   worktree, sandbox and supervisor endpoint, and no focus change; each
#   destroys its own sandbox copy and cannot observe the host checkout,
#   ambient credentials, the other execution or the network; git-lease and
#   the supervisor are restarted while both work, and reconcile repairs
#   without duplicates and without losing either agent's work; each returns
#   a verified patch and evidence only to its own review worktree; one is
#   rejected and the other applied by explicit command; all runtime cleanup
#   is confirmed while results and review history stay.
#
# It runs in a temporary directory with its own HOME and git-lease config,
# against the Herdr stand-in (testdata/herdr-standin). ACCEPTANCE_BIN names a
# directory holding git-lease and herdr-standin; without it they are built.
# Needs bubblewrap, git, jq and Go (to build). Exits non-zero at the first
# step that fails, saying which.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/git-lease-acceptance-XXXXXX")
standin_pid=
finish() {
	[ -z "$standin_pid" ] || kill "$standin_pid" 2>/dev/null || true
	(cd "$work/repo" 2>/dev/null && git lease cleanup --all >/dev/null 2>&1) || true
	rm -rf "$work"
}
trap finish EXIT

step() { printf '\n== %s\n' "$*" >&2; }
ok() { printf '   ok: %s\n' "$*" >&2; }
die() { printf 'FAILED: %s\n' "$*" >&2; exit 1; }
# waitfor WHAT COMMAND…: run COMMAND until it succeeds (two minutes at most).
waitfor() {
	local what=$1 i=0
	shift
	until "$@" >/dev/null 2>&1; do
		i=$((i + 1))
		[ "$i" -lt 1200 ] || die "timed out waiting for $what"
		sleep 0.1
	done
}
field() { git lease show --json "$1" | jq -r "$2"; }
activity() { [ "$(field "$1" '.activity.message // ""')" = "$2" ]; }
gone() {
	local out
	out=$(git lease wait --timeout 1s "$1" 2>&1 || true)
	grep -q 'nothing runs it' <<<"$out"
}
# calls METHOD: how many times Herdr was asked METHOD.
calls() { grep -c "^$1\$" "$work/herdr-requests" || true; }

bin=${ACCEPTANCE_BIN:-}
if [ -z "$bin" ]; then
	bin=$work/bin
	(cd "$root" && go build -o "$bin/git-lease" ./cmd/git-lease && go build -o "$bin/herdr-standin" ./testdata/herdr-standin)
fi
export PATH="$bin:$PATH"
export HOME=$work/home XDG_CONFIG_HOME=$work/home/.config GIT_CONFIG_GLOBAL=$work/gitconfig GIT_CONFIG_NOSYSTEM=1
mkdir -p "$HOME/.ssh" "$XDG_CONFIG_HOME/git-lease"
printf '[user]\n\tname = Acceptance\n\temail = acceptance@example.com\n[init]\n\tdefaultBranch = main\n' >"$GIT_CONFIG_GLOBAL"

# Ambient credentials no agent may see: a variable of git-lease's
# environment, a key file in the user's home, an ssh agent socket.
export ACCEPTANCE_TOKEN=ambient-secret-$$
echo "private key" >"$HOME/.ssh/id_acceptance"
export SSH_AUTH_SOCK=$work/ssh-agent.sock

# A gate every lease sees read-only (trusted policy's read_only): the agents
# wait at it, so the host decides when they probe.
gate=$work/gate
mkdir -m 0755 "$gate"
printf 'read_only = ["%s"]\n' "$gate" >"$XDG_CONFIG_HOME/git-lease/policy.toml"

export HERDR_SOCKET_PATH=$work/herdr.sock
herdr-standin -socket "$HERDR_SOCKET_PATH" -log "$work/herdr-requests" &
standin_pid=$!
waitfor "the Herdr stand-in" test -S "$HERDR_SOCKET_PATH"

step "one base in a repository whose checkout has uncommitted work"
mkdir "$work/repo" && cd "$work/repo"
git init -q
mkdir src
echo 'echo app' >src/app.sh
echo 'the base' >README
git add -A && git commit -q -m base
base=$(git rev-parse HEAD)
echo 'uncommitted' >>README
ok "base $base"

# agent N: destroy its own copy (then restore it, so that its result is its
# work alone), write its work, wait at the gate, probe, and keep working.
agent() {
	local n=$1 other=$2
	cat <<EOF
read host; read key
: acceptance-agent-$n
cp -a . /tmp/copy && rm -rf ./* && [ -z "\$(ls -A)" ] && echo destroyed:own-copy
cp -a /tmp/copy/. . && rm -rf /tmp/copy
echo "work of agent $n" > work-$n.txt
echo "blocked: wrote" > "\$LEASE_STATE_FILE"
until [ -e $gate/probe ]; do sleep 0.05; done
[ -e "\$host" ] && echo LEAK:host-checkout
[ -e "\$key" ] && echo LEAK:home-credential
env | grep -q ACCEPT""ANCE_TOKEN && echo LEAK:environment
grep -qa ACCEPT""ANCE_TOKEN /proc/[0-9]*/environ 2>/dev/null && echo LEAK:proc-environment
[ -n "\${SSH_AUTH_SOCK:-}" ] && echo LEAK:ssh-agent
find / -path /proc -prune -o -name work-$n.txt -print 2>/dev/null | grep -q . && echo found:own-work
find / -path /proc -prune -o -name work-$other.txt -print 2>/dev/null | grep -q . && echo LEAK:other-work
grep -qa acceptance-agent-$n /proc/[0-9]*/cmdline 2>/dev/null && echo found:own-process
m=acceptance-agent; grep -qa "\$m-$other" /proc/[0-9]*/cmdline 2>/dev/null && echo LEAK:other-process
[ "\$(awk -F: 'NR > 2 { gsub(/ /, "", \$1); print \$1 }' /proc/net/dev)" = lo ] || echo LEAK:network-interface
curl -s --max-time 3 http://1.1.1.1/ >/dev/null 2>&1 && echo LEAK:network
echo probed
echo "blocked: probed" > "\$LEASE_STATE_FILE"
while :; do sleep 0.1; done
EOF
}

step "two writing agents from one base, each under its own Herdr pane"
prompt=$(printf '%s\n%s\n' "$work/repo" "$HOME/.ssh/id_acceptance")
one=$(git lease start -q --detach --supervisor herdr --prompt "$prompt" -- sh -c "$(agent 1 2)")
two=$(git lease start -q --detach --supervisor herdr --prompt "$prompt" -- sh -c "$(agent 2 1)")
both() { activity "$one" "$1" && activity "$two" "$1"; }
waitfor "both agents to write their work" both wrote
for id in "$one" "$two"; do
	[ "$(field "$id" .base)" = "$base" ] || die "lease $id is not on the base"
	[ "$(field "$id" .sandboxed)" = true ] || die "lease $id is not sandboxed"
done
[ "$(field "$one" .branch)" != "$(field "$two" .branch)" ] || die "the leases share a branch"
[ "$(field "$one" .worktree)" != "$(field "$two" .worktree)" ] || die "the leases share a review worktree"
[ "$(field "$one" .supervisor.pane_id)" != "$(field "$two" .supervisor.pane_id)" ] || die "the leases share a pane"
! grep -q focus "$work/herdr-requests" || die "a pane was focused"
ok "leases $one and $two: own branches, worktrees, sandboxes and panes; no focus call"

step "each destroys its own copy and observes nothing of the host, the other lease or the network"
touch "$gate/probe"
waitfor "both agents to probe" both probed
for id in "$one" "$two"; do
	out=$(git lease logs --raw "$id")
	grep -q destroyed:own-copy <<<"$out" || die "lease $id did not destroy its copy: $out"
	grep -q found:own-work <<<"$out" && grep -q found:own-process <<<"$out" || die "lease $id's searches found not even its own work and process: $out"
	! grep LEAK <<<"$out" || die "lease $id observed the above"
done
[ "$(git status --porcelain)" = " M README" ] && [ -z "$(git ls-files --others --exclude-standard)" ] || die "the host checkout changed: $(git status --porcelain)"
ok "both destroyed their copies; no leak; the checkout holds only its own uncommitted edit"

step "git-lease and the supervisor restart while both work"
panes=$(calls workspace.create)
kill -9 "$(jq -r .pid "$(git rev-parse --git-common-dir)/lease/runs/$one/runner.json")"
herdr-standin -socket "$HERDR_SOCKET_PATH" -call standin.restart >/dev/null
waitfor "lease $one's runner to be gone" gone "$one"
waitfor "lease $two's runner to be gone" gone "$two"
git lease reconcile
git lease reconcile | grep -q 'nothing to repair' || die "a second reconcile repaired more"
[ "$(git for-each-ref refs/leases/ | wc -l)" = 2 ] && [ "$(git for-each-ref refs/heads/lease/ | wc -l)" = 2 ] || die "duplicate logs or branches"
[ "$(calls workspace.create)" = "$panes" ] || die "reconcile opened new panes"
for id in "$one" "$two"; do git lease collect --partial "$id" >/dev/null; done
ok "one log, one branch and one pane per lease; both agents' work collected"

step "each verified patch and its evidence reach only its own review worktree"
for pair in "$one 1 2" "$two 2 1"; do
	set -- $pair
	[ "$(field "$1" .state)" = review ] || die "lease $1 is $(field "$1" .state)"
	[ "$(field "$1" '[.result.manifest[].path] | join(" ")')" = "work-$2.txt" ] || die "lease $1's result: $(field "$1" .result.manifest)"
	git lease verify "$1" >/dev/null
	wt=$(field "$1" .worktree)
	[ "$(cat "$wt/work-$2.txt")" = "work of agent $2" ] && [ ! -e "$wt/work-$3.txt" ] || die "lease $1's review worktree"
done
[ ! -e work-1.txt ] && [ ! -e work-2.txt ] || die "a result reached the host checkout"
ok "each result verified, in its own review worktree only"

step "one rejected, the other applied, each by explicit command"
git lease reject --reason "not this one" "$one"
git checkout -q -- README # apply updates a checked-out branch only in a clean checkout
git lease apply "$two"
[ "$(git rev-parse main)" = "$(field "$two" .result.commit)" ] || die "main is not lease $two's result"
[ "$(cat work-2.txt)" = "work of agent 2" ] && [ ! -e work-1.txt ] || die "the checkout after apply"
ok "lease $one rejected, lease $two applied to main"

step "cleanup confirmed; results and review history stay"
git lease cleanup --all
for id in "$one" "$two"; do
	[ "$(field "$id" .cleanup.state)" = confirmed ] || die "lease $id cleanup $(field "$id" .cleanup.state)"
	[ ! -e "$(field "$id" .worktree)" ] || die "lease $id's review worktree is left"
	git rev-parse -q --verify "lease/$id" >/dev/null || die "lease $id's branch is gone"
done
[ ! -e "$(git rev-parse --git-common-dir)/lease/runs/$one" ] && [ ! -e "$(git rev-parse --git-common-dir)/lease/runs/$two" ] || die "runtime state is left"
left=$(herdr-standin -socket "$HERDR_SOCKET_PATH" -call pane.list); ! grep -q "lease:" <<<"$left" || die "a lease's pane is left in Herdr: $left"
refs=$(git for-each-ref)
git lease cleanup --all >/dev/null
[ "$(git for-each-ref)" = "$refs" ] || die "a second cleanup changed refs"
git lease verify --all >/dev/null
[ "$(field "$one" .state)" = rejected ] && [ "$(field "$two" .state)" = applied ] || die "the decisions are not recorded"
ok "runtime gone; logs, branches, notes and decisions stay and verify"
printf '\nacceptance: passed\n' >&2
