# want: limit-files
# 100,000 new files.
mkdir many && cd many && seq 100000 | xargs touch
