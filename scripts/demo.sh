#!/usr/bin/env bash
# Installs git-lease and runs one lease on a generated demo repository, then
# shows what a reviewer sees. Nothing outside the demo directory and the
# install prefix is touched.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/debian-packages.sh"
need_packages bwrap=bubblewrap
"$here/scripts/install.sh"
export PATH="${PREFIX:-$HOME/.local}/bin:$PATH"

demo=$(mktemp -d "${TMPDIR:-/tmp}/git-lease-demo.XXXXXX")
cd "$demo"
git init -q -b main repo
cd repo
git config user.name "Demo Developer"
git config user.email "demo@example.com"
printf 'def greet(name):\n    return "hello " + name\n' > greet.py
printf 'old notes\n' > NOTES.txt
cat > agent.sh <<'AGENT'
#!/bin/sh
# A scripted stand-in for a coding agent: it looks around its sandbox, then
# edits, adds and deletes files.
echo "agent: I am $(id -un) in $(pwd); I see $(ls /proc | grep -c '^[0-9]') processes and these files: $(ls | tr '\n' ' ')"
cat "$HOME/.ssh/id_rsa" 2>/dev/null || echo "agent: no ssh keys here"
sed -i 's/hello /Hello, /' greet.py
printf 'def test_greet():\n    assert greet("x") == "Hello, x"\n' > test_greet.py
rm NOTES.txt
echo "agent: done"
AGENT
git add . && git commit -q -m "demo: initial commit"
echo "uncommitted work of the developer" >> NOTES.txt   # never reaches the lease

echo "== git lease start -- sh agent.sh   (a sandboxed lease; demo repository: $demo/repo)"
id=$(git lease start -- sh agent.sh)
echo "== git lease show $id"
git lease show "$id"
echo "== git lease diff $id"
git lease diff "$id"
echo "== the developer's checkout is untouched"
git status --short
echo "== the lease log (refs/leases/$id): every entry signed"
git log --format='%h %s' "refs/leases/$id"
echo "== git lease verify $id"
git lease verify "$id"
echo "== git lease review $id"
git lease review "$id"
