# want: gitmodules-unsafe
# policy: result = { submodules = true, protected = [] }
# The same .gitmodules where policy allows submodules: its content is checked.
printf "[submodule \"../../modules/evil\"]\n\tpath = evil\n\turl = ../evil.git\n" > .gitmodules
