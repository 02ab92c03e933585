//go:build race

package txn

// getAllocs is getAllocs under the race detector, which allocates more:
// 6 before the execution details.
const getAllocs = 7
