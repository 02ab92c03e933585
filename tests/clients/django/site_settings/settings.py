"""Django settings for the Strata round trip: one MySQL database (the
cluster named by STRATA_HOST / STRATA_PORT, database STRATA_DB) with
utf8mb4, the contrib apps and the shop app."""
import os

SECRET_KEY = "strata-django-round-trip"
DEBUG = False
USE_TZ = True
TIME_ZONE = "UTC"
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "shop",
]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.mysql",
        "HOST": os.environ["STRATA_HOST"],
        "PORT": os.environ["STRATA_PORT"],
        "USER": "root",
        "PASSWORD": "",
        "NAME": os.environ["STRATA_DB"],
        "OPTIONS": {"charset": "utf8mb4"},
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
