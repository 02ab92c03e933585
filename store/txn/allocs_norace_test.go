//go:build !race

package txn

// getAllocs is what a point get of a committed key allocates on the
// store below gRPC (BenchmarkStorageGet's path, through an mvcc.View):
// the view, the value and the response with its execution details (one
// allocation). The pooled reader and the response in one allocation with
// its details took it from 5 to 3.
const getAllocs = 3
