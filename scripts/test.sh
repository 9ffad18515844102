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
