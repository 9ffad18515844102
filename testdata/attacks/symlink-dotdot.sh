# want: symlink-escape
# A symlink that climbs out of the tree, and a write through it.
ln -s ../../ up
echo pwned > up/escaped 2>/dev/null || true
