# want: path-control-char
# A path with a newline in it.
touch "$(printf "a\nb")"
