# want: special-file
# A FIFO, which would block whoever reads it.
mkfifo pipe
