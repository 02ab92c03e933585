// Package errno holds the MySQL error codes and SQLSTATEs Strata returns, and
// Error, the one error type a MySQL client ever sees. Every other error that
// reaches the protocol layer is converted with FromError (which maps Storage
// errors and context cancellation, and reports anything else as 1105).
//
// Messages follow MySQL's wording where MySQL has one, so that tools and
// drivers that match on them keep working, and say what to do next.
package errno
