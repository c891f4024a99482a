"""``manage.py drf_create_token USER``: print a new full-scope API token for USER, as DRF's
command did (``-r`` is accepted and changes nothing: every run issues a new token)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from catalogs.accounts.services import api_token_create


class Command(BaseCommand):
    help = "Create a full-scope API token (read, publish, review) for a user and print it."

    def add_arguments(self, parser) -> None:
        parser.add_argument("username", help="the user the token is for")
        parser.add_argument(
            "-r", "--reset", action="store_true", help="accepted for DRF's scripts; no effect"
        )
        parser.add_argument("--name", default="", help="the token's name (default: a timestamp)")

    def handle(self, *args, **options) -> None:
        username = options["username"]
        try:
            user = get_user_model().objects.get(username=username)
        except get_user_model().DoesNotExist:
            raise CommandError(f"Cannot create the token for user {username!r}: no such user.")
        name = options["name"] or f"drf_create_token {timezone.now():%Y-%m-%d %H:%M:%S.%f}"
        _, secret = api_token_create(user=user, name=name)
        self.stdout.write(f"Generated token {secret} for user {username}")
