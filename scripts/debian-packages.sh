# Sourced by the scripts that need programs from Debian packages:
# need_packages COMMAND=PACKAGE... installs, with apt-get (through sudo
# unless root), the package of each command that is not on PATH.
need_packages() {
	local missing=() pair
	for pair in "$@"; do
		command -v "${pair%%=*}" >/dev/null 2>&1 || missing+=("${pair#*=}")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	local sudo=""
	[ "$(id -u)" = 0 ] || sudo=sudo
	echo "installing ${missing[*]} (apt-get)" >&2
	$sudo apt-get install -y "${missing[@]}" >/dev/null 2>&1 ||
		{ $sudo apt-get update >/dev/null && $sudo apt-get install -y "${missing[@]}" >/dev/null; }
}
