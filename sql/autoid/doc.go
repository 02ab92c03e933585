// Package autoid hands out a SQL node's cluster-unique ids: row handles of
// tables without an integer primary key (IDAllocator, from batches PD
// reserves through kv.Storage.AllocID) and AUTO_INCREMENT values per table
// (AutoIncAllocator, whose bound is a KV key under 'm' advanced in a small
// transaction of its own). Both hand out reserved ranges from memory, so
// values are unique cluster-wide but not consecutive across SQL nodes;
// nothing reserved is ever handed out twice, and a node that restarts skips
// what it had reserved. TiDB's meta/autoid in small.
//
// The node's allocators belong to its sql/domain.Domain; they are safe for
// concurrent use.
//
// # AUTO_INCREMENT
//
// Values are per table from 1. A node reserves AutoIncStep (1000) values at
// a time; an explicit value rebases the counter past it (Rebase), and the
// AUTO_INCREMENT=N table option starts it at N.
package autoid
