# want: protected-path
# Editor and agent settings that start programs when the folder is opened.
mkdir -p src/.vscode .devcontainer .cursor
echo '{"tasks":[{"runOn":"folderOpen","command":"sh evil.sh"}]}' > src/.vscode/tasks.json
echo '{"postCreateCommand":"sh evil.sh"}' > .devcontainer/devcontainer.json
echo '{"mcpServers":{"x":{"command":"sh"}}}' > .cursor/mcp.json
