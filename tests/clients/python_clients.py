"""Smoke program for Python MySQL drivers against Strata.

Usage: python3 python_clients.py {pymysql|mysqldb} HOST PORT

Creates a database and a table, inserts with parameters (and executemany),
reads back, commits and rolls back a transaction, reads server variables the
drivers use, and prints "OK <driver>". Any failure raises (exit status 1).
"""
import sys


def connect(driver, host, port, db=None):
    if driver == "pymysql":
        import pymysql
        kw = dict(host=host, port=port, user="root", password="", autocommit=True)
        if db:
            kw["database"] = db
        return pymysql.connect(**kw)
    import MySQLdb
    kw = dict(host=host, port=port, user="root", passwd="", autocommit=True)
    if db:
        kw["db"] = db
    return MySQLdb.connect(**kw)


def main():
    driver, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    db = "py_" + driver
    conn = connect(driver, host, port)
    cur = conn.cursor()
    cur.execute("DROP DATABASE IF EXISTS " + db)
    cur.execute("CREATE DATABASE " + db)
    conn.close()

    conn = connect(driver, host, port, db)
    cur = conn.cursor()
    cur.execute("SELECT VERSION(), @@version_comment, DATABASE()")
    version, _, current = cur.fetchone()
    assert version.startswith("8.0.11-Strata"), version
    assert current == db, current
    cur.execute("CREATE TABLE items (id INT PRIMARY KEY AUTO_INCREMENT, name VARCHAR(50) NOT NULL, price DECIMAL(10,2), note TEXT)")
    cur.execute("INSERT INTO items (name, price, note) VALUES (%s, %s, %s)", ("apple", "1.25", "it's \"quoted\""))
    first = cur.lastrowid
    assert first > 0, first
    cur.execute("SELECT LAST_INSERT_ID()")
    assert cur.fetchone()[0] == first
    cur.executemany("INSERT INTO items (name, price, note) VALUES (%s, %s, %s)",
                    [("pear", "2.50", None), ("plum", "0.75", "ünïcödé ✓")])
    cur.execute("SELECT id, name, price, note FROM items ORDER BY id")
    rows = cur.fetchall()
    assert len(rows) == 3, rows
    assert rows[0][1] == "apple" and str(rows[0][2]) == "1.25" and rows[0][3] == "it's \"quoted\"", rows[0]
    assert rows[1][3] is None, rows[1]
    assert rows[2][3] == "ünïcödé ✓", rows[2]

    cur.execute("SELECT name FROM items WHERE price > %s ORDER BY name", ("1.00",))
    assert [r[0] for r in cur.fetchall()] == ["apple", "pear"]

    # Transactions.
    conn.autocommit(False)
    cur.execute("UPDATE items SET price = price + 1 WHERE name = %s", ("apple",))
    conn.rollback()
    cur.execute("SELECT price FROM items WHERE name = 'apple'")
    assert str(cur.fetchone()[0]) == "1.25"
    cur.execute("UPDATE items SET price = 9.99 WHERE name = %s", ("pear",))
    cur.execute("DELETE FROM items WHERE name = %s", ("plum",))
    conn.commit()
    conn.autocommit(True)
    cur.execute("SELECT COUNT(*), SUM(price) FROM items")
    count, total = cur.fetchone()
    assert count == 2 and str(total) == "11.24", (count, total)

    # Errors carry MySQL's codes.
    try:
        cur.execute("INSERT INTO items (id, name) VALUES (%s, 'dup')", (first,))
        raise AssertionError("duplicate accepted")
    except Exception as e:  # IntegrityError in both drivers
        assert e.args[0] == 1062, e.args

    cur.execute("SHOW TABLES")
    assert [r[0] for r in cur.fetchall()] == ["items"]
    cur.execute("DROP DATABASE " + db)
    conn.close()
    print("OK", driver)


if __name__ == "__main__":
    main()
