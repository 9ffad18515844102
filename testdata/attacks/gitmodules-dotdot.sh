# want: submodule
# A .gitmodules whose submodule name climbs out (CVE-2018-11235).
printf "[submodule \"../../modules/evil\"]\n\tpath = evil\n\turl = ../evil.git\n" > .gitmodules
