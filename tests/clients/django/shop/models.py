"""The shop app: authors with a unique case-insensitive email and a JSON
profile, and their books (a ForeignKey that cascades on delete). The
models are the state after migration 0002."""
from django.db import models


class Author(models.Model):
    name = models.CharField(max_length=100)
    email = models.CharField(max_length=191, unique=True, db_collation="utf8mb4_general_ci")
    profile = models.JSONField(default=dict)
    nickname = models.CharField(max_length=50, default="")

    class Meta:
        app_label = "shop"


class Book(models.Model):
    author = models.ForeignKey(Author, on_delete=models.CASCADE, related_name="books")
    title = models.CharField(max_length=200, db_index=True)
    page_count = models.BigIntegerField(null=True)
    published = models.DateTimeField(null=True)

    class Meta:
        app_label = "shop"
