package expr

// Math functions.

var mathBuiltins = map[string]builtin{}
