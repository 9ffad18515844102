# want: limit-bytes
# policy: limits = { disk = "4GiB" }
# A 2 GiB sparse file: cheap to make, expensive to read.
truncate -s 2G sparse
