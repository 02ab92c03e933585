package tests

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The real-client tests below run when the client is installed (make
// test-clients installs mariadb-client, python3-pymysql and
// python3-mysqldb); each drives one client against a cluster.

// TestMySQLCLI drives the mysql command-line client (Debian's
// mariadb-client): batch mode, \s status, SHOW commands, --ssl, source
// file.sql, LOAD DATA LOCAL INFILE, and an interactive session (through a
// pty) whose tab-completion rehash reads every table's columns.
func TestMySQLCLI(t *testing.T) {
	mysqlBin, err := exec.LookPath("mysql")
	if err != nil {
		t.Skip("mysql client not installed (make test-clients installs it)")
	}
	c := startCluster(t, clusterOpts{})
	host, port, err := net.SplitHostPort(c.SQLAddrs[0])
	require.NoError(t, err)
	cli := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(mysqlBin, append([]string{"-h", host, "-P", port, "-u", "root"}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "mysql %v: %s", args, out)
		return string(out)
	}
	dir := t.TempDir()

	out := cli("", "--batch", "-e", "SELECT 1+1 AS two, 'a\tb' AS s")
	require.Equal(t, "two\ts\n2\ta\\tb\n", out, "batch mode escapes tabs")

	out = cli("", "-e", "status")
	require.Contains(t, out, "Server version:\t\t8.0.11-Strata")
	require.Contains(t, out, "Current user:\t\troot@127.0.0.1")
	require.Contains(t, out, "SSL:\t\t\tCipher in use is", "the client uses TLS by default")

	out = cli("", "--ssl", "--batch", "-e", "SHOW STATUS LIKE 'Ssl_version'")
	require.Contains(t, out, "Ssl_version\tTLSv1.")
	out = cli("", "--skip-ssl", "--batch", "-e", "SHOW STATUS LIKE 'Ssl_version'")
	require.Equal(t, "Variable_name\tValue\nSsl_version\t\n", out)

	script := filepath.Join(dir, "setup.sql")
	require.NoError(t, os.WriteFile(script, []byte(`CREATE DATABASE cli;
USE cli;
-- a comment
CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20));
INSERT INTO t VALUES (1, 'one'), (2, 'two');
`), 0o600))
	cli("", "-e", "source "+script)
	out = cli("SELECT COUNT(*) FROM cli.t;\n", "--batch") // statements on stdin
	require.Equal(t, "COUNT(*)\n2\n", out)

	data := filepath.Join(dir, "rows.tsv")
	var b strings.Builder
	for i := 3; i <= 2002; i++ {
		fmt.Fprintf(&b, "%d\tname %d\n", i, i)
	}
	require.NoError(t, os.WriteFile(data, []byte(b.String()), 0o600))
	out = cli("", "--local-infile=1", "-D", "cli", "--batch", "-e",
		"LOAD DATA LOCAL INFILE '"+data+"' INTO TABLE t; SELECT COUNT(*), MAX(id) FROM t")
	require.Equal(t, "COUNT(*)\tMAX(id)\n2002\t2002\n", out)

	out = cli("", "--batch", "-D", "cli", "-e", "SHOW DATABASES; SHOW TABLES; SHOW COLUMNS FROM t; SHOW CREATE TABLE t; SHOW VARIABLES LIKE 'version_comment'; SHOW GRANTS; SHOW ENGINES")
	for _, want := range []string{"Database\n", "\ncli\n", "Tables_in_cli\nt\n", "id\tint", "CREATE TABLE `t`", "version_comment\t", "GRANT ALL PRIVILEGES ON *.* TO `root`@`%` WITH GRANT OPTION", "InnoDB\tDEFAULT"} {
		require.Contains(t, out, want)
	}

	// Interactive, through a pseudo-terminal: the client reads every
	// table's columns for tab completion at start (COM_FIELD_LIST).
	if scriptBin, err := exec.LookPath("script"); err == nil {
		cmd := exec.Command(scriptBin, "-qc", strings.Join([]string{mysqlBin, "-h", host, "-P", port, "-u", "root", "-D", "cli"}, " "), "/dev/null")
		cmd.Stdin = strings.NewReader("SELECT name FROM t WHERE id = 2;\n\\s\nquit\n")
		tty, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", tty)
		require.Contains(t, string(tty), "Reading table information for completion")
		require.Contains(t, string(tty), "| two  |")
		require.Contains(t, string(tty), "Current database:\tcli")
		require.NotContains(t, string(tty), "ERROR")
	}

	// A caching_sha2_password user without the privilege: MySQL's 1142.
	cli("", "-e", "CREATE USER 'cs'@'%' IDENTIFIED WITH caching_sha2_password BY 'pw1'")
	cmd := exec.Command(mysqlBin, "-h", host, "-P", port, "-u", "cs", "-ppw1", "--ssl", "--batch", "-e", "SELECT * FROM cli.t")
	failed, err := cmd.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(failed), "ERROR 1142 (42000) at line 1: SELECT command denied to user 'cs'@'127.0.0.1' for table 't'")
}

// TestClientPrograms runs the small programs in tests/clients against one
// cluster: Python through python3-pymysql and python3-mysqldb
// (python_clients.py), and GORM (tests/clients/gorm, its own module).
func TestClientPrograms(t *testing.T) {
	c := startCluster(t, clusterOpts{})
	host, port, err := net.SplitHostPort(c.SQLAddrs[0])
	require.NoError(t, err)
	for _, driver := range []struct{ name, module string }{{"pymysql", "pymysql"}, {"mysqldb", "MySQLdb"}} {
		t.Run(driver.name, func(t *testing.T) {
			py := "/usr/bin/python3"
			if exec.Command(py, "-c", "import "+driver.module).Run() != nil {
				t.Skipf("%s: no module %s (make test-clients installs python3-%s)", py, driver.module, driver.name)
			}
			out, err := exec.Command(py, "clients/python_clients.py", driver.name, host, port).CombinedOutput()
			require.NoError(t, err, "%s", out)
			require.Equal(t, "OK "+driver.name+"\n", string(out))
		})
	}
	t.Run("gorm", func(t *testing.T) {
		deps := exec.Command("go", "mod", "download")
		deps.Dir = "clients/gorm"
		if out, err := deps.CombinedOutput(); err != nil {
			t.Skipf("GORM's modules are not available (make test-clients downloads them): %s", out)
		}
		run := exec.Command("go", "run", ".")
		run.Dir = "clients/gorm"
		run.Env = append(os.Environ(), "CGO_ENABLED=0", "STRATA_DSN=root@tcp("+c.SQLAddrs[0]+")/?parseTime=true")
		out, err := run.CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Equal(t, "OK gorm\n", string(out))
	})
}
