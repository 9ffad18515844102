# want: path-dotgit
# .git under case folding.
mkdir .GIT && echo "[core] fsmonitor = evil" > .GIT/config
