# want: mode-setuid
# A setuid executable.
printf "#!/bin/sh\nid\n" > tool && chmod 4755 tool
