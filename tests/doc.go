// Package tests holds Strata's cluster-level tests. They run the real pd,
// storenode and sqlnode binaries (built once per test run by TestMain) on
// free loopback ports through the shared helper startCluster, talk to them
// with go-sql-driver/mysql, and kill -9 / restart members.
package tests
