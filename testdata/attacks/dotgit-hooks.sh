# want: path-dotgit
# A git hook planted for whoever checks the result out.
mkdir -p .git/hooks && printf "#!/bin/sh\necho pwned\n" > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit
