# want: path-dotgit
# The NTFS 8.3 short name of .git.
mkdir GIT~1 && echo x > GIT~1/config
