"""``python manage.py sign_versions``: sign catalog versions published before signing existed."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from catalogs.trust import services, signing


class Command(BaseCommand):
    help = "Sign every catalog version that has no signature yet (all of them with --resign)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--resign", action="store_true", help="re-sign signed versions with the current key"
        )

    def handle(self, *args: object, **options: object) -> None:
        try:
            count = services.catalog_versions_sign(resign=bool(options["resign"]))
            key_id = signing.signing_key_current()[1].key_id
        except signing.SigningKeyError as exc:
            raise CommandError(str(exc))
        self.stdout.write(f"Signed {count} catalog version(s) with key {key_id}.")
