# want: protected-path
# A CI workflow that would run with the repository's secrets.
mkdir -p .github/workflows && printf "on: push\njobs: {}\n" > .github/workflows/ci.yml
