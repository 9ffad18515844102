package verify

import (
	"strings"
)

// A protected entry names paths a result may not touch. An entry ending in
// "/" protects a directory and everything under it, any other one path. An
// entry starting with "**/" matches at any depth (".envrc" in any
// directory), any other one only from the top of the tree. Names are
// compared folded (case, HFS+ ignorables, NTFS trailing dots and spaces), so
// that ".GITHUB/x" and ".github./x" are caught.

// ProtectedEntry is one entry of the default table and why a change to
// what it names runs code.
type ProtectedEntry struct {
	Path string
	Why  string
}

// ProtectedTable is the default protected paths: files that make git, a
// shell, CI, a git hook manager, a package manager, an editor or an agent
// run a program of the file's choosing on someone's machine, before anyone
// reviews the change or simply by checking it out, pulling it or opening
// it. Every entry matches at any depth: tools read them in subprojects too,
// and a nested copy becomes the top one when a directory is moved.
var ProtectedTable = []ProtectedEntry{
	// git itself
	{"**/.gitattributes", "chooses filter, diff and merge drivers: programs git runs on checkout, diff and merge (git-lfs contacts the URL .lfsconfig names)"},
	{"**/.gitmodules", "points git at other repositories and their URLs, fetched on clone and update"},
	{"**/.lfsconfig", "sets git-lfs's server URL and options, contacted on checkout"},
	// the shell
	{"**/.envrc", "direnv runs it on cd"},
	// CI and automation
	{"**/.github/", "GitHub Actions workflows, composite actions, Dependabot: run on push"},
	{"**/.gitlab-ci.yml", "GitLab CI pipeline: runs on push"},
	{"**/.gitlab/", "GitLab CI includes and templates kept next to the pipeline"},
	{"**/.circleci/", "CircleCI pipeline: runs on push"},
	{"**/.travis.yml", "Travis CI pipeline: runs on push"},
	{"**/Jenkinsfile", "Jenkins pipeline: runs on push"},
	{"**/.buildkite/", "Buildkite pipeline: runs on push"},
	{"**/azure-pipelines.yml", "Azure Pipelines: runs on push"},
	{"**/bitbucket-pipelines.yml", "Bitbucket Pipelines: runs on push"},
	{"**/.drone.yml", "Drone pipeline: runs on push"},
	{"**/.woodpecker.yml", "Woodpecker pipeline: runs on push"},
	{"**/.woodpecker/", "Woodpecker pipelines: run on push"},
	// git hook managers
	{"**/.husky/", "husky's git hooks: run on commit and push"},
	{"**/.pre-commit-config.yaml", "pre-commit's hooks: fetched and run on commit"},
	{"**/lefthook.yml", "lefthook's git hooks: run on commit and push"},
	{"**/.lefthook.yml", "lefthook's git hooks: run on commit and push"},
	// package managers that execute or redirect
	{"**/.npmrc", "npm's registry, scripts and node options: run or fetched on install"},
	{"**/.yarnrc", "yarn 1's registry and yarn-path (a program yarn runs instead of itself)"},
	{"**/.yarnrc.yml", "yarn's yarnPath, plugins and registry: run or fetched on install"},
	{"**/.yarn/", "yarn's releases and plugins that .yarnrc.yml runs"},
	{"**/.pnpmfile.cjs", "pnpm runs it on install"},
	{"**/pip.conf", "pip's index URL: where installs come from"},
	{"**/.cargo/config", "cargo's runners, rustc wrappers and registries"},
	{"**/.cargo/config.toml", "cargo's runners, rustc wrappers and registries"},
	{"**/.bundle/config", "Bundler's gem sources and paths"},
	{"**/.mvn/", "Maven's JVM and extension settings, loaded by every build"},
	// editors and agents
	{"**/.vscode/", "VS Code tasks, launch configurations and settings that name programs"},
	{"**/.devcontainer/", "dev container definitions: images and commands run on open"},
	{"**/.idea/", "JetBrains run configurations and tool settings"},
	{"**/.claude/", "Claude Code settings, hooks and commands"},
	{"**/.codex/", "Codex settings and commands"},
	{"**/.gemini/", "Gemini CLI settings and commands"},
	{"**/.cursor/", "Cursor settings, rules and MCP servers"},
	{"**/.mcp.json", "MCP servers: programs an agent starts"},
	// git-lease
	{"**/.lease.toml", "the policy the next lease on this commit runs under"},
}

// DefaultProtected are the paths of ProtectedTable.
var DefaultProtected = protectedPaths()

func protectedPaths() []string {
	out := make([]string, len(ProtectedTable))
	for i, e := range ProtectedTable {
		out[i] = e.Path
	}
	return out
}

// protectedBy returns the first entry of protected that p falls under, or "".
func protectedBy(protected []string, p string) string {
	fp := strings.Split(foldPath(p), "/")
	for _, e := range protected {
		rest, anyDepth := strings.CutPrefix(e, "**/")
		rest, isDir := strings.CutSuffix(rest, "/")
		if rest == "" {
			continue
		}
		fe := strings.Split(foldPath(rest), "/")
		for start := 0; start+len(fe) <= len(fp); start++ {
			if !anyDepth && start > 0 {
				break
			}
			if !equalParts(fp[start:start+len(fe)], fe) {
				continue
			}
			// A file entry matches the whole remaining path; a directory
			// entry the directory itself (replaced by a file) or what is
			// under it.
			if isDir || start+len(fe) == len(fp) {
				return e
			}
		}
	}
	return ""
}

func equalParts(a, b []string) bool {
	for i := range b {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// ProtectedWhy says why a default entry is protected, or "" for an entry
// that policy added.
func ProtectedWhy(entry string) string {
	for _, e := range ProtectedTable {
		if e.Path == entry {
			return e.Why
		}
	}
	return ""
}
