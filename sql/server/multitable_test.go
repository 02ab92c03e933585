package server_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMultiTableUpdateInfo checks a multi-table UPDATE's affected rows
// (rows changed) and OK info: rows matched counts each target row once,
// however many joined rows match it, across the updated tables.
func TestMultiTableUpdateInfo(t *testing.T) {
	ts := startServer(t)
	r := dialRaw(t, ts.addr)
	r.login()
	query := func(q string) []byte {
		r.write(0, append([]byte{0x03}, q...))
		return r.read()
	}
	for _, q := range []string{
		"CREATE TABLE test.m1 (id INT PRIMARY KEY, v INT)",
		"CREATE TABLE test.m2 (id INT PRIMARY KEY, m1_id INT, x INT)",
		"INSERT INTO test.m1 VALUES (1, 0), (2, 0), (3, 0)",
		"INSERT INTO test.m2 VALUES (1, 1, 0), (2, 1, 0), (3, 2, 0)",
	} {
		require.Equal(t, byte(0), query(q)[0], q)
	}
	for _, c := range []struct {
		q        string
		affected byte
		info     string
	}{
		{"UPDATE test.m1 JOIN test.m2 ON m2.m1_id = m1.id SET m1.v = m1.v + 1", 2, "Rows matched: 2  Changed: 2  Warnings: 0"},
		{"UPDATE test.m1 JOIN test.m2 ON m2.m1_id = m1.id SET m1.v = 1", 0, "Rows matched: 2  Changed: 0  Warnings: 0"},
		{"UPDATE test.m1, test.m2 SET m1.v = 2, m2.x = m2.x WHERE m2.m1_id = m1.id", 2, "Rows matched: 5  Changed: 2  Warnings: 0"},
		{"UPDATE test.m1 LEFT JOIN test.m2 ON m2.m1_id = m1.id SET m2.x = 7", 3, "Rows matched: 3  Changed: 3  Warnings: 0"},
		{"UPDATE test.m1 JOIN test.m2 ON m2.m1_id = m1.id SET m1.v = 3 WHERE m1.id = 9", 0, "Rows matched: 0  Changed: 0  Warnings: 0"},
	} {
		ok := query(c.q)
		require.Equal(t, []byte{0x00, c.affected, 0}, ok[:3], c.q)
		info := ok[7:]
		require.Equal(t, c.info, string(info[1:]), c.q)
	}
}
