package policy

// What the external tests see of the package's insides.

var BuiltinPresets = builtinPresets

const PromptVar = promptVar

func (p NamedPreset) Validate() error { return p.validate() }
