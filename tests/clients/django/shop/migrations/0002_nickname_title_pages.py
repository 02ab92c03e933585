from django.db import migrations, models


class Migration(migrations.Migration):
    """Runs on populated tables: a new column with a default, a wider
    indexed title, and pages renamed to a nullable BIGINT page_count."""
    dependencies = [("shop", "0001_initial")]
    operations = [
        migrations.AddField(model_name="author", name="nickname", field=models.CharField(default="", max_length=50)),
        migrations.AlterField(model_name="book", name="title", field=models.CharField(db_index=True, max_length=200)),
        migrations.RenameField(model_name="book", old_name="pages", new_name="page_count"),
        migrations.AlterField(model_name="book", name="page_count", field=models.BigIntegerField(null=True)),
    ]
