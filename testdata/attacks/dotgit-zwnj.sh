# want: path-dotgit
# .git followed by a zero-width non-joiner, which HFS+ ignores.
d=$(printf ".git\342\200\214") && mkdir "$d" && echo x > "$d/config"
