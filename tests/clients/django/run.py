"""Django (3.2, mysqlclient) against Strata.

Usage: python3 run.py HOST PORT

Creates the database (utf8mb4), migrates the contrib apps (auth,
contenttypes, sessions, admin) and the shop app to 0001, fills the tables,
migrates shop to 0002 (AddField, AlterField, RenameField on the populated
tables), then runs the app's queries: create, icontains, the ForeignKey
join, a JSON key lookup, a unique violation (IntegrityError), update,
delete with cascade, a user and a session. Prints "OK django"; any
failure raises (exit status 1).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main():
    host, port = sys.argv[1], sys.argv[2]
    db = "django_shop"
    os.environ.update(STRATA_HOST=host, STRATA_PORT=port, STRATA_DB=db,
                      DJANGO_SETTINGS_MODULE="site_settings.settings")

    import MySQLdb
    conn = MySQLdb.connect(host=host, port=int(port), user="root", passwd="")
    cur = conn.cursor()
    cur.execute("DROP DATABASE IF EXISTS " + db)
    # MySQL 8's default collation for utf8mb4 (Strata's, as TiDB's, is
    # utf8mb4_bin): Django's icontains is LIKE under the column's collation.
    cur.execute("CREATE DATABASE " + db + " CHARACTER SET utf8mb4 COLLATE utf8mb4_0900_ai_ci")
    conn.close()

    import django
    from django.core.management import call_command
    from django.db import IntegrityError, connection, transaction
    django.setup()
    quiet = dict(verbosity=0, interactive=False)

    call_command("migrate", "shop", "0001", **quiet)
    with connection.cursor() as c:
        c.execute("INSERT INTO shop_author (name, email, profile) VALUES (%s, %s, %s)",
                  ["Ann", "Ann@Example.com", '{"city": "Oslo", "langs": ["no", "en"]}'])
        ann = c.lastrowid
        c.execute("INSERT INTO shop_author (name, email, profile) VALUES (%s, %s, %s)",
                  ["Bob", "bob@example.com", '{"city": "Lima"}'])
        bob = c.lastrowid
        c.executemany("INSERT INTO shop_book (author_id, title, pages) VALUES (%s, %s, %s)",
                      [(ann, "Fjords", 120), (ann, "Northern Lights", 300), (bob, "Andes", 88)])

    call_command("migrate", **quiet)  # contrib apps and shop 0002
    with connection.cursor() as c:
        c.execute("SELECT title, page_count FROM shop_book ORDER BY id")
        rows = c.fetchall()
        assert list(rows) == [("Fjords", 120), ("Northern Lights", 300), ("Andes", 88)], rows
        c.execute("SELECT nickname FROM shop_author ORDER BY id")
        assert [r[0] for r in c.fetchall()] == ["", ""]
        cols = {col.name: col for col in connection.introspection.get_table_description(c, "shop_book")}
        assert "page_count" in cols and "pages" not in cols, list(cols)
        assert cols["page_count"].null_ok, cols["page_count"]
        assert cols["title"].internal_size == 200, cols["title"]
        c.execute("SELECT COLLATION_NAME FROM information_schema.COLUMNS "
                  "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'shop_author' AND COLUMN_NAME = 'email'")
        assert c.fetchone()[0] == "utf8mb4_general_ci"
        constraints = connection.introspection.get_constraints(c, "shop_book")
        fks = [v["foreign_key"] for v in constraints.values() if v["foreign_key"]]
        assert fks == [("shop_author", "id")], constraints
        assert any(v["index"] and v["columns"] == ["title"] for v in constraints.values()), constraints

    from shop.models import Author, Book
    from django.contrib.auth.models import User
    from django.contrib.sessions.backends.db import SessionStore

    # Create and read back.
    cy = Author.objects.create(name="Cy", email="cy@example.com", nickname="c",
                               profile={"city": "Oslo", "tags": ["new"], "age": 41})
    Book.objects.create(author=cy, title="Harbour", page_count=5_000_000_000)
    assert Author.objects.get(pk=cy.pk).profile == {"city": "Oslo", "tags": ["new"], "age": 41}

    # icontains, the utf8mb4_general_ci email, the FK join, JSON keys.
    assert sorted(a.name for a in Author.objects.filter(name__icontains="AN")) == ["Ann"]
    assert Author.objects.get(email="ann@example.com").name == "Ann"
    assert sorted(b.title for b in Book.objects.filter(author__name="Ann")) == ["Fjords", "Northern Lights"]
    assert sorted(b.title for b in Book.objects.filter(author__profile__city="Oslo")) == \
        ["Fjords", "Harbour", "Northern Lights"]
    assert list(Author.objects.filter(profile__age__gt=40).values_list("name", flat=True)) == ["Cy"]
    assert list(Author.objects.filter(profile__has_key="langs").values_list("name", flat=True)) == ["Ann"]
    assert list(Author.objects.filter(profile__contains={"city": "Lima"}).values_list("name", flat=True)) == ["Bob"]
    assert Book.objects.get(title="Harbour").page_count == 5_000_000_000
    from django.db.models import Count, Sum
    per_author = dict(Author.objects.annotate(n=Count("books")).values_list("name", "n"))
    assert per_author == {"Ann": 2, "Bob": 1, "Cy": 1}, per_author
    assert Book.objects.aggregate(s=Sum("page_count"))["s"] == 5_000_000_508

    # The unique email is case-insensitive: IntegrityError, the
    # transaction rolls back, the connection stays usable.
    try:
        with transaction.atomic():
            Author.objects.create(name="Ann again", email="ANN@example.COM")
        raise AssertionError("duplicate email accepted")
    except IntegrityError as e:
        assert e.args[0] == 1062, e.args
    assert Author.objects.count() == 3

    # A ForeignKey to a missing author is refused by the database.
    try:
        with transaction.atomic():
            with connection.cursor() as c:
                c.execute("INSERT INTO shop_book (author_id, title) VALUES (999, 'orphan')")
        raise AssertionError("orphan book accepted")
    except IntegrityError as e:
        assert e.args[0] == 1452, e.args

    # Update, then delete with cascade (Django collects the books and
    # deletes them first; the database's ON DELETE is RESTRICT-like).
    assert Book.objects.filter(author__name="Ann").update(page_count=1) == 2
    Author.objects.filter(pk=cy.pk).update(profile={"city": "Rome"}, nickname="cyrus")
    assert Author.objects.get(pk=cy.pk).nickname == "cyrus"
    deleted, per_model = Author.objects.filter(email__iexact="ANN@EXAMPLE.COM").delete()
    assert per_model == {"shop.Book": 2, "shop.Author": 1}, per_model
    assert Book.objects.count() == 2

    # contrib: a user, a permission check, a session, the admin log.
    u = User.objects.create_superuser("admin", "admin@example.com", "s3cret-pass")
    assert User.objects.get(username="admin").check_password("s3cret-pass")
    s = SessionStore()
    s["user"] = u.pk
    s.create()
    assert SessionStore(session_key=s.session_key)["user"] == u.pk
    from django.contrib.admin.models import LogEntry, ADDITION
    from django.contrib.contenttypes.models import ContentType
    LogEntry.objects.log_action(u.pk, ContentType.objects.get_for_model(Author).pk,
                                str(cy.pk), str(cy), ADDITION, "created")
    assert LogEntry.objects.filter(user=u).count() == 1

    # Backwards to 0001: BIGINT page_count back to INT pages refuses a
    # value that no longer fits (MySQL's 1264), then succeeds once it fits.
    from django.db import DataError
    try:
        call_command("migrate", "shop", "0001", **quiet)
        raise AssertionError("5e9 pages narrowed to INT")
    except DataError as e:
        assert e.args[0] == 1264, e.args
    Book.objects.filter(title="Harbour").update(page_count=7)
    call_command("migrate", "shop", "0001", **quiet)
    with connection.cursor() as c:
        c.execute("SELECT title, pages FROM shop_book ORDER BY id")
        assert list(c.fetchall()) == [("Andes", 88), ("Harbour", 7)]
        cols = [col.name for col in connection.introspection.get_table_description(c, "shop_author")]
        assert cols == ["id", "name", "email", "profile"], cols
    call_command("migrate", **quiet)
    assert Book.objects.get(title="Harbour").page_count == 7

    with connection.cursor() as c:
        c.execute("DROP DATABASE " + db)
    print("OK django")


if __name__ == "__main__":
    main()
