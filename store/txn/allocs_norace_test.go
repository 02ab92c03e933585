//go:build !race

package txn

// getAllocs is what a point get of a committed key allocates on the
// store below gRPC (BenchmarkStorageGet's path, through an mvcc.View).
// The execution details added one (their four messages in one
// allocation): 4 before them.
const getAllocs = 5
