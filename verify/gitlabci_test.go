package verify

import (
	"strings"
	"testing"
)

func TestGitLabIncludesNamesTheRepositoryFilesCIRuns(t *testing.T) {
	ci := `stages: [build]
include: '/ci/base.yml'
variables:
  include: not/this.yml
---
include:
  - local: '/templates/build.yml'   # the build
  - 'ci/test.yaml'
  - local: configs/*.yml
  - project: other/group
    file: elsewhere.yml
  - remote: 'https://example.com/x.yml'
  - template: Auto-DevOps.gitlab-ci.yml
  - local: ../outside.yml
build:
  script: make
`
	got := strings.Join(GitLabIncludes([]byte(ci)), " ")
	if want := "ci/base.yml templates/build.yml ci/test.yaml configs/"; got != want {
		t.Fatalf("includes: %q, want %q", got, want)
	}
	// What the entries protect, through the one matcher.
	entries := GitLabIncludes([]byte(ci))
	for p, want := range map[string]bool{"templates/build.yml": true, "configs/deploy.yml": true, "Templates/Build.yml": true, "other/elsewhere.yml": false, "x/templates/build.yml": false} {
		if got := protectedBy(entries, p) != ""; got != want {
			t.Errorf("%s protected: %v, want %v", p, got, want)
		}
	}
}

func FuzzGitLabIncludes(f *testing.F) {
	f.Add([]byte("include:\n  - local: a/b.yml\n"))
	f.Add([]byte("include: '/x/*.yaml'\n"))
	f.Add([]byte("include://.yml")) // once kept a leading slash
	f.Fuzz(func(t *testing.T, ci []byte) {
		for _, e := range GitLabIncludes(ci) {
			if e == "" || strings.HasPrefix(e, "/") || strings.HasPrefix(e, "../") || strings.Contains(e, "\n") {
				t.Fatalf("entry %q from %q", e, ci)
			}
		}
	})
}
