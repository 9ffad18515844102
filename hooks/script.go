package hooks

import (
	"fmt"
	"strings"
)

// marker is the line that identifies a hook script written by this package.
const marker = "# git-lease managed hook"

// script is the hook named name: a POSIX sh script that keeps its standard
// input in a temporary file, runs <name>.chained (the hook that was there
// before, when it is an executable file) and then `<command> hook <name>`,
// each with the hook's arguments and that input, and fails if either
// fails. A reference-transaction hook can only refuse in the "prepared"
// state, so in the others it always succeeds. Everything is quoted; the
// helpers it needs come from `command -p`, the system's default path, so
// the hook depends on PATH only to find command when that is not absolute.
func script(name, command string) []byte {
	final := `exit "$status"`
	if name == LocalHook {
		final = `[ "$1" = prepared ] || exit 0` + "\n" + final
	}
	return []byte(fmt.Sprintf(`#!/bin/sh
%s: written by git-lease, which rewrites it on every install; do not edit.
# Put your own %s hook in %s.chained: this one runs it first.
name=%s
lease_command=%s
case $0 in
*/*) chained=${0%%/*}/$name.chained ;;
*) chained=./$name.chained ;;
esac
input=$(command -p mktemp) || exit 1
trap 'command -p rm -f -- "$input"' EXIT
trap 'exit 1' HUP INT TERM
command -p cat >"$input" || exit 1
status=0
if [ -f "$chained" ] && [ -x "$chained" ]; then
	"$chained" "$@" <"$input" || status=1
fi
"$lease_command" hook "$name" "$@" <"$input" || status=1
%s
`, marker, name, name, quote(name), quote(command), final))
}

// quote makes s one single-quoted sh word.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// isOurs reports whether a hook's content is a script written by this package.
func isOurs(content []byte) bool {
	for _, line := range strings.Split(string(content), "\n") {
		if strings.HasPrefix(line, marker+":") {
			return true
		}
	}
	return false
}
