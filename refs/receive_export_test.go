package refs

// SplitAlternatesForTest exposes splitAlternates to the external tests.
var SplitAlternatesForTest = splitAlternates
