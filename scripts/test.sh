#!/usr/bin/env bash
# Runs git-lease's tests: vet, then every unit and transcript test. Installs
# bubblewrap (Debian package) first when it is missing, because the sandbox
# tests run real sandboxes.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v bwrap >/dev/null 2>&1; then
	sudo=""
	[ "$(id -u)" = 0 ] || sudo=sudo
	$sudo apt-get install -y bubblewrap >/dev/null 2>&1 || { $sudo apt-get update >/dev/null && $sudo apt-get install -y bubblewrap >/dev/null; }
fi
test -z "$(gofmt -l $(git ls-files '*.go'))" || { echo "gofmt would change:"; gofmt -l $(git ls-files '*.go'); exit 1; }
go vet ./...
go test -count=1 -timeout 15m ./...
# Every fuzz target, briefly (run longer by hand: -fuzztime=10m).
for pkg in $(go list ./...); do
	for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		out=$(go test -run '^$' -fuzz "^${target}\$" -fuzztime "${FUZZTIME:-5s}" "$pkg" 2>&1) ||
			{ echo "$out"; echo "fuzzing $pkg $target failed"; exit 1; }
	done
done
echo "fuzz targets ran ${FUZZTIME:-5s} each"
