#!/usr/bin/env bash
# Builds git-lease and installs it as $PREFIX/bin/git-lease (default
# PREFIX=~/.local), so that `git lease` works, plus its man page, so that
# `git lease --help` (which git turns into `man git-lease`) works too.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${PREFIX:-$HOME/.local}
mkdir -p "$prefix/bin" "$prefix/share/man/man1"
version=$(git describe --always --dirty 2>/dev/null || echo dev)
go build -ldflags "-X main.version=$version" -o "$prefix/bin/git-lease" ./cmd/git-lease
"$prefix/bin/git-lease" man > "$prefix/share/man/man1/git-lease.1"
echo "installed $prefix/bin/git-lease ($version)"
case ":$PATH:" in
*":$prefix/bin:"*) ;;
*) echo "add $prefix/bin to your PATH to use it as: git lease" ;;
esac
