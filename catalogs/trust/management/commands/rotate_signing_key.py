"""``python manage.py rotate_signing_key``: a new signing key; old public keys stay verifiable."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from catalogs.trust import services, signing


class Command(BaseCommand):
    help = (
        "Generate a new ECDSA P-256 signing key into SIGNING_KEY_FILE and make it current. "
        "Old public keys stay listed at /api/v1/signing-keys/, so old signatures still verify."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--resign",
            action="store_true",
            help="also re-sign every catalog version with the new key",
        )

    def handle(self, *args: object, **options: object) -> None:
        try:
            old = signing.signing_key_list().filter(current=True).first()
            key = signing.signing_key_rotate()
        except signing.SigningKeyError as exc:
            raise CommandError(str(exc))
        before = f" (was {old.key_id})" if old is not None else ""
        self.stdout.write(f"Current signing key: {key.key_id}{before}")
        if options["resign"]:
            count = services.catalog_versions_sign(resign=True)
            self.stdout.write(f"Re-signed {count} catalog version(s) with {key.key_id}.")
