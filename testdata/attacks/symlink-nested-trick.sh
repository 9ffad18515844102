# want: symlink-escape
# A harmless-looking nested link whose target leaves the tree.
mkdir -p docs/v2 && ln -s ../../../.. docs/v2/latest
