# want: path-dotgit
# A nested repository: what would become a gitlink.
mkdir -p vendor/lib/.git && echo "ref: refs/heads/main" > vendor/lib/.git/HEAD && echo x > vendor/lib/file
