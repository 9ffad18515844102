package policy_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/git-lease/git-lease/gitlease/policy"
)

// TestBuiltinPresetsNeverTakeThePromptAsAnOption checks the shape of each
// built-in preset's command with prompts that look like options: the
// prompt is an argument of its own right after "--" (past which the
// agents' parsers take no option), or glued to its option ("--prompt=…"),
// and nothing else in the command changes. TestRealAgentsTakeThePromptAsAPrompt
// runs the real parsers.
func TestBuiltinPresetsNeverTakeThePromptAsAnOption(t *testing.T) {
	for name, p := range policy.BuiltinPresets() {
		for _, prompt := range []string{"--version", "-x", "--help me fix it"} {
			argv := policy.WithPrompt(p.Command, prompt)
			i := slices.IndexFunc(p.Command, func(a string) bool { return strings.Contains(a, policy.PromptVar) })
			switch {
			case i < 0:
				t.Errorf("%s: no %s in %q", name, policy.PromptVar, p.Command)
			case p.Command[i] == policy.PromptVar:
				if i == 0 || argv[i-1] != "--" || argv[i] != prompt || slices.Index(argv, "--") != i-1 {
					t.Errorf("%s: prompt %q is not the argument right after the first \"--\": %q", name, prompt, argv)
				}
			default:
				opt, v, ok := strings.Cut(p.Command[i], "=")
				if !ok || v != policy.PromptVar || !strings.HasPrefix(opt, "--") || argv[i] != opt+"="+prompt {
					t.Errorf("%s: prompt %q is neither after \"--\" nor glued to an option: %q", name, prompt, argv)
				}
			}
			if argv[0] != p.Command[0] || len(argv) != len(p.Command) {
				t.Errorf("%s: prompt %q changed the command: %q", name, prompt, argv)
			}
		}
	}
}
