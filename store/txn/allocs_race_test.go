//go:build race

package txn

// getAllocs is getAllocs under the race detector, which allocates more
// and drops a share of what sync.Pool is given (the pooled reader is then
// allocated again): 5 measured, 7 before the pooled reader.
const getAllocs = 6
