# want: case-collision
# Two names that are one file on a case-insensitive file system.
echo upper > README && echo lower > readme
