package server_test

import (
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTimestampTimeZoneProtocols: a TIMESTAMP written by a session in
// one zone is the same instant for a session in another, in the text
// protocol and in the binary one (prepared statements, whose parameters
// are read in the session zone too); a DATETIME is never converted.
func TestTimestampTimeZoneProtocols(t *testing.T) {
	ts := startServer(t)
	kolkata := ts.open(t, "test", "time_zone=%27%2B05%3A30%27")
	utc := ts.open(t, "test", "time_zone=%27UTC%27")
	_, err := kolkata.Exec("CREATE TABLE tp (id INT PRIMARY KEY, ts TIMESTAMP(3) NULL, dt DATETIME NULL)")
	require.NoError(t, err)
	ins, err := kolkata.Prepare("INSERT INTO tp VALUES (?, ?, ?)")
	require.NoError(t, err)
	defer ins.Close()
	_, err = ins.Exec(1, "2024-01-01 05:30:00.250", "2024-01-01 05:30:00")
	require.NoError(t, err)
	_, err = kolkata.Exec("INSERT INTO tp VALUES (2, '2024-07-01 12:00:00', '2024-07-01 12:00:00')")
	require.NoError(t, err)

	for _, c := range []struct {
		name string
		q    func(q string, args ...any) [][]string
		want [][]string
	}{
		{"+05:30", dbStrings(t, kolkata), [][]string{{"1", "2024-01-01 05:30:00.250", "2024-01-01 05:30:00"}, {"2", "2024-07-01 12:00:00.000", "2024-07-01 12:00:00"}}},
		{"UTC", dbStrings(t, utc), [][]string{{"1", "2024-01-01 00:00:00.250", "2024-01-01 05:30:00"}, {"2", "2024-07-01 06:30:00.000", "2024-07-01 12:00:00"}}},
	} {
		// Text protocol, then binary (a prepared statement with a
		// parameter: go-sql-driver prepares it).
		require.Equal(t, c.want, c.q("SELECT id, ts, dt FROM tp ORDER BY id"), c.name)
		require.Equal(t, c.want, c.q("SELECT id, ts, dt FROM tp WHERE id >= ? ORDER BY id", 0), c.name)
	}
	// A parameter compared with a TIMESTAMP is read in the session zone.
	require.Equal(t, [][]string{{"1"}}, dbStrings(t, kolkata)("SELECT id FROM tp WHERE ts = ?", "2024-01-01 05:30:00.250"))
	require.Equal(t, [][]string{{"1"}}, dbStrings(t, utc)("SELECT id FROM tp WHERE ts = ?", "2024-01-01 00:00:00.250"))
}

// dbStrings returns a query function over db: the rows as text (with
// args, through a prepared statement in the binary protocol).
func dbStrings(t *testing.T, db *sql.DB) func(q string, args ...any) [][]string {
	return func(q string, args ...any) [][]string {
		rows, err := db.Query(q, args...)
		require.NoError(t, err, q)
		out, _ := scanStrings(t, rows, "NULL")
		return out
	}
}
