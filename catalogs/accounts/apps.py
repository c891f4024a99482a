"""App configuration of accounts."""

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    """API tokens: named, scoped, expiring, stored hashed; their authentication and scope checks."""

    name = "catalogs.accounts"
    label = "accounts"
    default_auto_field = "django.db.models.BigAutoField"
