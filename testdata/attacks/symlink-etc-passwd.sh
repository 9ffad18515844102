# want: symlink-escape
# A symlink to an absolute host path.
ln -s /etc/passwd passwd
